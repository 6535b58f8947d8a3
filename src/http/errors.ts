import { randomInt } from 'node:crypto';
import { Type, type Static } from '@sinclair/typebox';

/** The one error body every failure answers with. */
export const ErrorBody = Type.Object(
  {
    errormsg: Type.String({ description: 'What went wrong, in a sentence a person understands.' }),
    logdata: Type.Object(
      {
        entry: Type.Integer({ description: "Unique number of this error; it appears in the server's log line." }),
        date: Type.Integer({ description: 'When the error happened, in Unix seconds.' }),
      },
      { description: 'Where to find this error in the server log.' },
    ),
  },
  { $id: 'error', title: 'error' },
);
export type ErrorBody = Static<typeof ErrorBody>;

/** The one error type: an HTTP status, a message for the client, and headers that go with it. */
export class ApiError extends Error {
  override name = 'ApiError';

  constructor(
    readonly statusCode: number,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
    /** Members the error body carries besides `errormsg` and `logdata` (a refused merged edit's `results`). */
    readonly details: Readonly<Record<string, unknown>> = {},
  ) {
    super(message);
  }

  static badRequest(message: string): ApiError {
    return new ApiError(400, message);
  }

  static notFound(message = 'No such playlist.'): ApiError {
    return new ApiError(404, message);
  }

  static forbidden(message: string): ApiError {
    return new ApiError(403, message);
  }

  static gone(message: string): ApiError {
    return new ApiError(410, message);
  }

  static conflict(message: string): ApiError {
    return new ApiError(409, message);
  }

  static unprocessable(message: string): ApiError {
    return new ApiError(422, message);
  }

  /** A wait in words, as `Retry-After` gives it in seconds: "45 seconds", "1 minute", "15 minutes" (rounded up). */
  static waitInWords(seconds: number): string {
    const whole = Math.max(1, Math.ceil(seconds));
    if (whole < 120) return `${whole} second${whole === 1 ? '' : 's'}`;
    return `${Math.ceil(whole / 60)} minutes`;
  }

  static tooManyRequests(retryAfterSeconds: number, message: string): ApiError {
    return new ApiError(429, message, { 'retry-after': String(Math.max(1, Math.ceil(retryAfterSeconds))) });
  }

  static unavailable(message: string, retryAfterSeconds = 5): ApiError {
    return new ApiError(503, message, { 'retry-after': String(retryAfterSeconds) });
  }
}

/** A fresh log entry number: random, so that entries from several instances do not collide. */
export function newEntry(): number {
  return randomInt(1, 2 ** 48);
}

export function errorBody(message: string, entry: number, now = Date.now()): ErrorBody {
  return { errormsg: message, logdata: { entry, date: Math.floor(now / 1000) } };
}
