import { characterCount } from '../domain/search-text.js';
import { NAME_MAX_LENGTH } from '../users/user-name.js';

/** A Basic credential as sent by a client: in the `security` header (the specification) or in `Authorization`. */
export interface Credential {
  readonly source: 'security' | 'authorization';
  readonly name: string;
  readonly password: string;
  /** The base64 of `name:password` as sent, the key of the verified-credential cache (see `credentialToken`). */
  readonly token: string;
}

/**
 * Where a credential was sent and its base64 as sent, not decoded: what a request answered from the cache of verified
 * credentials needs, since only a token that was decoded and verified before can be found there.
 */
export type TokenResult =
  | { readonly kind: 'token'; readonly source: Credential['source']; readonly token: string }
  | { readonly kind: 'missing' }
  | { readonly kind: 'malformed' };

export type CredentialResult =
  | { readonly kind: 'ok'; readonly credential: Credential }
  | { readonly kind: 'missing' }
  | { readonly kind: 'malformed' }
  | { readonly kind: 'too-long'; readonly name: string };

export const PASSWORD_MAX_BYTES = 1024;

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const utf8 = new TextDecoder('utf-8', { fatal: true });

type Headers = Readonly<Record<string, string | string[] | undefined>>;

/**
 * Reads the credential (RFC 7617, UTF-8). `security` wins over `Authorization`; in `security` the word
 * `Basic` may be left out.
 */
export function readCredential(headers: Headers): CredentialResult {
  const found = credentialToken(headers);
  return found.kind === 'token' ? decode(found.token, found.source) : found;
}

/**
 * The credential's token and where it was sent, by the same rules as `readCredential` but without decoding it: no
 * base64, no UTF-8, no name or length check (an empty token is `missing` there, and is returned here).
 */
export function credentialToken(headers: Headers): TokenResult {
  const security = single(headers.security);
  if (security !== undefined) {
    const value = security.trim();
    return { kind: 'token', source: 'security', token: /^basic\s/i.test(value) ? value.slice(6).trim() : value };
  }
  const authorization = single(headers.authorization);
  if (authorization === undefined) return { kind: 'missing' };
  const match = /^basic\s+(\S+)\s*$/i.exec(authorization);
  return match?.[1] === undefined ? { kind: 'malformed' } : { kind: 'token', source: 'authorization', token: match[1] };
}

/**
 * An app token sent as `Bearer TOKEN` (RFC 6750, 1.11.0): in `security` or, when there is no `security` header, in
 * `Authorization`, as a Basic credential is. Undefined when the credential is not a Bearer one; the token is taken as
 * sent (an empty one is malformed, which the token check refuses).
 */
export function bearerToken(
  headers: Headers,
): { readonly source: Credential['source']; readonly token: string } | undefined {
  const security = single(headers.security);
  const [source, value] =
    security !== undefined
      ? (['security', security] as const)
      : (['authorization', single(headers.authorization)] as const);
  if (value === undefined) return undefined;
  const match = /^bearer(?:\s+(\S*))?\s*$/i.exec(value.trim());
  if (match !== null) return { source, token: match[1] ?? '' };
  // `Bearer` followed by more than one word: a malformed token, not a Basic credential.
  return /^bearer\s/i.test(value.trim()) ? { source, token: '' } : undefined;
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function decode(token: string, source: Credential['source']): CredentialResult {
  // A 1024-byte password and a 64-character name fit in well under 2 KiB of base64 of UTF-8.
  if (token.length === 0) return { kind: 'missing' };
  if (token.length > 2048 || token.length % 4 === 1 || !BASE64.test(token)) return { kind: 'malformed' };
  let secret: string;
  try {
    secret = utf8.decode(Buffer.from(token, 'base64'));
  } catch {
    return { kind: 'malformed' };
  }
  const colon = secret.indexOf(':');
  if (colon <= 0 || secret.slice(0, colon).includes('\0')) return { kind: 'malformed' };
  const name = secret.slice(0, colon);
  const password = secret.slice(colon + 1);
  if (characterCount(name) > NAME_MAX_LENGTH || Buffer.byteLength(password) > PASSWORD_MAX_BYTES) {
    return { kind: 'too-long', name };
  }
  return { kind: 'ok', credential: { source, name, password, token } };
}
