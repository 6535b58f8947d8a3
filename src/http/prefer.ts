/** The longest `Prefer: wait` honoured, in seconds. */
export const LONGEST_WAIT_SECONDS = 60;

/**
 * The `wait` preference of a `Prefer` header (RFC 7240 §4.3), in whole seconds, at most LONGEST_WAIT_SECONDS; undefined
 * when there is none or it is not a number of seconds (a preference the server does not understand is ignored, as
 * RFC 7240 says). The first `wait` in the header counts; a request may repeat the header.
 */
export function preferredWait(header: string | readonly string[] | undefined): number | undefined {
  if (header === undefined) return undefined;
  const text = typeof header === 'string' ? header : header.join(',');
  for (const preference of text.split(',')) {
    const [token, ...rest] = preference.split(';')[0]!.split('=');
    if (token?.trim().toLowerCase() !== 'wait') continue;
    const value = rest
      .join('=')
      .trim()
      .replace(/^"(.*)"$/, '$1');
    if (!/^\d{1,9}$/.test(value)) return undefined;
    const seconds = Number(value);
    return seconds === 0 ? undefined : Math.min(seconds, LONGEST_WAIT_SECONDS);
  }
  return undefined;
}
