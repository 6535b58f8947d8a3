import { Type } from '@sinclair/typebox';
import { ApiError } from './errors.js';
/**
 * Times as the API takes and answers them. Every time a client sends (a link's `expiresAt`, a smart playlist's
 * `added` `before` and `after`) is read by `rfc3339Millis`, and every time answered is written by `rfc3339`, so that
 * what one route takes another takes too, and every answer is a time any RFC 3339 reader reads.
 */

/** What a client is told a time must be, after the field's name. */
export const TIME_RULE = 'an RFC 3339 date-time from year 0000 to 9999 in UTC, without a leap second';

/** The schema of an `expiresAt` a client sends (a link's, a token's): optional, read as `futureTime` reads it. */
export const expiresAtSchema = (description: string) =>
  Type.Optional(
    Type.String({
      maxLength: 64,
      format: 'date-time',
      'x-message': `must be ${TIME_RULE}, such as 2030-01-31T18:00:00Z`,
      description,
    }),
  );

/** A time a client sends as `field` that must be after `now`, as milliseconds; 400 naming the field otherwise. */
export function futureTime(sent: string, field: string, now: number): number {
  const at = rfc3339Millis(sent);
  if (at === undefined) throw ApiError.badRequest(`"${field}" must be ${TIME_RULE}.`);
  if (at <= now) throw ApiError.badRequest(`"${field}" must be in the future.`);
  return at;
}

// RFC 3339's date-time (section 5.6): `T` and `Z` in either case, or a space for the `T` as its note allows; any
// fraction of a second (read to the millisecond, the rest dropped); `Z` or an offset of hours and minutes.
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/;

/** The first instant of year 0000 in UTC: 0000-01-01T00:00:00.000Z. */
export const EARLIEST_TIME = -62_167_219_200_000;
/** The last instant of year 9999 in UTC: 9999-12-31T23:59:59.999Z. */
export const LATEST_TIME = 253_402_300_799_999;

/** 400 Gregorian years, which repeat their calendar exactly. */
const FOUR_CENTURIES_MS = 146_097 * 86_400_000;

const isLeapYear = (year: number) => year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * The instant a date-time names, in Unix ms, with a leap second (`:60`) read as the instant the next minute starts;
 * undefined for text that is not one or a date no calendar has (30 February, 24:00, an offset of +24:00).
 */
function instant(text: string): { readonly millis: number; readonly leapSecond: boolean } | undefined {
  const m = DATE_TIME.exec(text);
  if (m === null) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  if (month < 1 || month > 12) return undefined;
  const daysInMonth = month === 2 && isLeapYear(year) ? 29 : DAYS_IN_MONTH[month - 1]!;
  if (day < 1 || day > daysInMonth || hour > 23 || minute > 59 || second > 60) return undefined;
  const offsetHours = m[9] === undefined ? 0 : Number(m[9]);
  const offsetMinutes = m[10] === undefined ? 0 : Number(m[10]);
  if (offsetHours > 23 || offsetMinutes > 59) return undefined;
  const offset = (m[8] === '-' ? -1 : 1) * (offsetHours * 60 + offsetMinutes) * 60_000;
  const millis = Number((m[7] ?? '').padEnd(3, '0').slice(0, 3));
  // Date.UTC reads years 0 to 99 as 1900 to 1999: the same date 400 years on, less those 400 years, is exact.
  const utc = Date.UTC(year + 400, month - 1, day, hour, minute, second, millis) - FOUR_CENTURIES_MS;
  return { millis: utc - offset, leapSecond: second === 60 };
}

/**
 * The Unix ms of a time the API takes, or undefined: an RFC 3339 date-time (`2030-01-31T18:00:00Z`, `…+01:00`,
 * fractions of a second) with a real calendar date, no leap second (`:60`, which nothing here can store or answer),
 * whose instant is in years 0000 to 9999 once in UTC (`9999-12-31T23:00:00-01:00` is in year 10000, which RFC 3339
 * cannot write).
 */
export function rfc3339Millis(text: string): number | undefined {
  const read = instant(text);
  if (read === undefined || read.leapSecond) return undefined;
  return read.millis >= EARLIEST_TIME && read.millis <= LATEST_TIME ? read.millis : undefined;
}

/**
 * The Unix ms of a time a smart playlist's stored rules hold. Rules stored without `rfc3339Millis`'s checks may hold
 * a leap second, read as the instant the next minute starts, or an instant before year 0000 or after 9999, read as
 * the first or last one in them (no song is added outside them, so every comparison with one comes out the same).
 */
export function storedRfc3339Millis(text: string): number | undefined {
  const read = instant(text);
  return read === undefined ? undefined : Math.min(Math.max(read.millis, EARLIEST_TIME), LATEST_TIME);
}

/**
 * A time as the API answers it: RFC 3339 in UTC with milliseconds and a four-digit year. An instant outside years
 * 0000 to 9999, which only a time stored without `rfc3339Millis`'s checks can be, is answered as the first or last
 * one in them.
 */
export function rfc3339(millis: number): string {
  return new Date(Math.min(Math.max(millis, EARLIEST_TIME), LATEST_TIME)).toISOString();
}
