import { describe, expect, it } from 'vitest';
import { EARLIEST_TIME, LATEST_TIME, rfc3339, rfc3339Millis, storedRfc3339Millis } from './times.js';

/** Date.UTC for any year, 0 to 99 included (which Date.UTC reads as 1900 to 1999). */
const utc = (year: number, ...rest: number[]) => {
  const date = new Date(Date.UTC(2000, 0, 1));
  date.setUTCFullYear(year, rest[0] ?? 0, rest[1] ?? 1);
  date.setUTCHours(rest[2] ?? 0, rest[3] ?? 0, rest[4] ?? 0, rest[5] ?? 0);
  return date.getTime();
};

describe('rfc3339Millis', () => {
  it('reads RFC 3339 date-times, with offsets and fractions', () => {
    expect(rfc3339Millis('2026-12-07T10:00:00Z')).toBe(Date.UTC(2026, 11, 7, 10));
    expect(rfc3339Millis('2026-12-07t10:00:00z')).toBe(Date.UTC(2026, 11, 7, 10));
    expect(rfc3339Millis('2026-12-07 10:00:00.5+01:30')).toBe(Date.UTC(2026, 11, 7, 8, 30, 0, 500));
    expect(rfc3339Millis('2026-12-07T10:00:00.123456789-00:00')).toBe(Date.UTC(2026, 11, 7, 10, 0, 0, 123));
    expect(rfc3339Millis('2026-12-07T10:00:00.1234567890123Z')).toBe(Date.UTC(2026, 11, 7, 10, 0, 0, 123));
    expect(rfc3339Millis('2024-02-29T00:00:00Z')).toBe(Date.UTC(2024, 1, 29));
    expect(rfc3339Millis('2000-02-29T00:00:00Z')).toBe(Date.UTC(2000, 1, 29));
  });

  it('reads years 0000 to 0099 as themselves, with their leap days', () => {
    expect(rfc3339Millis('0000-01-01T00:00:00Z')).toBe(EARLIEST_TIME);
    expect(rfc3339Millis('0000-01-01T00:00:00Z')).toBe(utc(0));
    expect(rfc3339Millis('0000-02-29T12:00:00Z')).toBe(utc(0, 1, 29, 12));
    expect(rfc3339Millis('0004-02-29T00:00:00Z')).toBe(utc(4, 1, 29));
    expect(rfc3339Millis('0099-12-31T23:59:59.999Z')).toBe(utc(99, 11, 31, 23, 59, 59, 999));
    expect(rfc3339Millis('0100-02-29T00:00:00Z')).toBeUndefined();
  });

  it('takes instants from year 0000 to 9999 in UTC only', () => {
    expect(rfc3339Millis('9999-12-31T23:59:59.999Z')).toBe(LATEST_TIME);
    expect(rfc3339Millis('9999-12-31T22:59:59.999-01:00')).toBe(LATEST_TIME);
    expect(rfc3339Millis('0000-01-01T01:00:00+01:00')).toBe(EARLIEST_TIME);
    expect(rfc3339Millis('9999-12-31T23:00:00-01:00')).toBeUndefined();
    expect(rfc3339Millis('0000-01-01T00:59:59.999+01:00')).toBeUndefined();
  });

  it('refuses what is not one, a date no calendar has, and a leap second', () => {
    for (const text of [
      '2026-12-07',
      '2026-12-07T10:00Z',
      '2026-12-07T10:00:00',
      '2026-12-07T10:00:00+0100',
      '2026-12-07T10:00:00+01',
      '2026-12-07T10:00:00.Z',
      '2025-02-29T00:00:00Z',
      '2026-04-31T00:00:00Z',
      '2026-13-01T00:00:00Z',
      '2026-00-01T00:00:00Z',
      '2026-12-00T00:00:00Z',
      '2026-12-07T24:00:00Z',
      '2026-12-07T10:60:00Z',
      '2026-12-07T10:00:00+24:00',
      '2026-12-07T10:00:00+01:60',
      '2016-12-31T23:59:60Z',
      '2016-12-31T23:59:60.999Z',
      '+010000-01-01T00:00:00Z',
      '10000-01-01T00:00:00Z',
      '-000001-01-01T00:00:00Z',
      ' 2026-12-07T10:00:00Z',
      '2026-12-07T10:00:00Z\n',
      '２０２６-12-07T10:00:00Z',
    ]) {
      expect(rfc3339Millis(text), text).toBeUndefined();
    }
  });
});

describe('storedRfc3339Millis', () => {
  it('reads what rfc3339Millis reads alike', () => {
    for (const text of ['2026-12-07T10:00:00Z', '0000-01-01T00:00:00Z', '9999-12-31T23:59:59.999Z']) {
      expect(storedRfc3339Millis(text), text).toBe(rfc3339Millis(text));
    }
  });

  it('reads a leap second as the next minute, and an instant outside years 0000 to 9999 as the nearest in them', () => {
    expect(storedRfc3339Millis('2016-12-31T23:59:60Z')).toBe(Date.UTC(2017, 0, 1));
    expect(storedRfc3339Millis('9999-12-31T23:00:00-01:00')).toBe(LATEST_TIME);
    expect(storedRfc3339Millis('0000-01-01T00:00:00+01:00')).toBe(EARLIEST_TIME);
    expect(storedRfc3339Millis('2025-02-29T00:00:00Z')).toBeUndefined();
  });
});

describe('rfc3339', () => {
  it('answers UTC with milliseconds and a four-digit year, from year 0000 to 9999', () => {
    expect(rfc3339(Date.UTC(2026, 11, 7, 10))).toBe('2026-12-07T10:00:00.000Z');
    expect(rfc3339(EARLIEST_TIME)).toBe('0000-01-01T00:00:00.000Z');
    expect(rfc3339(LATEST_TIME)).toBe('9999-12-31T23:59:59.999Z');
    expect(rfc3339(LATEST_TIME + 1)).toBe('9999-12-31T23:59:59.999Z');
    expect(rfc3339(EARLIEST_TIME - 1)).toBe('0000-01-01T00:00:00.000Z');
    expect(rfc3339(8.64e15)).toBe('9999-12-31T23:59:59.999Z');
  });

  it('answers what rfc3339Millis reads back to the same instant', () => {
    for (const millis of [EARLIEST_TIME, -1, 0, Date.UTC(2030, 5, 30, 23, 59, 59, 999), LATEST_TIME]) {
      expect(rfc3339Millis(rfc3339(millis))).toBe(millis);
    }
  });
});
