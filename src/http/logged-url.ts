/** A shared playlist's path (`/s/{token}…`, any case, any number of leading slashes): its token is a credential. */
const SHARE_TOKEN = /^(\/+s\/)[^/?#]*/i;

/**
 * A request's URL as logs, error messages and metrics may show it: a share link's token cut out
 * (`/s/[token]/image?size=64`), everything else as it came. Whoever holds a token may read the playlist, so it never
 * leaves the request that carried it.
 */
export function loggedUrl(url: string): string {
  return url.replace(SHARE_TOKEN, '$1[token]');
}
