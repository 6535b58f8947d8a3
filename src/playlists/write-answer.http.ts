import { Type, type TSchema } from '@sinclair/typebox';
import type { FastifyReply } from 'fastify';
import { prefersMinimal } from '../http/conditional.js';
import { JSON_TYPE, json } from '../http/responses.js';

/**
 * The answers of the writes of a playlist (PATCH, PUT, `POST …/songs`, `POST …/restore`, `POST …/edits`): the
 * playlist as a read now answers it, or, with `Prefer: return=minimal` (RFC 7240 §4.2), its version alone (and a
 * merged edit's results), which costs the same whatever the playlist's length. Either way with the ETag of the form
 * the write answers with.
 */

/** The `Prefer` request header of a write, for the OpenAPI description (any value passes: RFC 7240 ignores the rest). */
export const PREFER_HEADER = Type.Optional(
  Type.String({
    description:
      '`return=minimal` (RFC 7240, 1.9.0): answer `{"version"}` (a merged edit: `{"version", "results"}`) instead of the ' +
      'whole playlist, with the same `ETag` and `Preference-Applied: return=minimal`. Other preferences, and values ' +
      'the service does not know, are ignored.',
  }),
);

/** What a write answers: its ETag, the minimal answer's members, and the whole answer, written only when sent. */
export interface WriteAnswerParts {
  readonly etag: string;
  readonly minimal: { readonly version: number } & Readonly<Record<string, unknown>>;
  readonly body: () => Buffer | Promise<Buffer>;
}

/**
 * Sends a write's answer with its ETag: with `Prefer: return=minimal`, `minimal` and `Preference-Applied:
 * return=minimal`; otherwise the whole answer (`body`, written only then) and `whole`, the headers only it carries
 * (a merged edit's `Content-Location`).
 */
export async function sendWriteAnswer(
  request: { readonly headers: { readonly prefer?: string | readonly string[] | undefined } },
  reply: FastifyReply,
  answer: WriteAnswerParts,
  whole: Readonly<Record<string, string>> = {},
): Promise<FastifyReply> {
  reply.header('etag', answer.etag).type(JSON_TYPE);
  if (prefersMinimal(request.headers.prefer)) {
    return reply.header('preference-applied', 'return=minimal').send(JSON.stringify(answer.minimal));
  }
  const body = await answer.body();
  for (const [name, value] of Object.entries(whole)) reply.header(name, value);
  return reply.send(body);
}

/** `{"version": N}`: the minimal answer of a write, its members after `version` given. */
export const minimalSchema = (members: Record<string, TSchema> = {}) =>
  Type.Object(
    {
      version: Type.Integer({ description: "The playlist's version the write left (counted up by each edit)" }),
      ...members,
    },
    { description: 'The answer with `Prefer: return=minimal`' },
  );

/**
 * The 200 of a write: the whole answer, or with `Prefer: return=minimal` the minimal one (the description says
 * which); with its headers and `Preference-Applied`.
 */
export function writeAnswerDoc(
  description: string,
  whole: TSchema,
  minimal: TSchema,
  headers: Record<string, { type: 'string' | 'integer'; description: string }>,
) {
  return json(description, Type.Union([whole, minimal]), {
    ...headers,
    'Preference-Applied': {
      type: 'string' as const,
      description:
        '`return=minimal` when the request preferred it (`Prefer: return=minimal`): the answer is the minimal one.',
    },
  });
}
