import { characterCount } from '../search/search-text.js';

/** A Basic credential as sent by a client: in the `security` header (the specification) or in `Authorization`. */
export interface Credential {
  readonly source: 'security' | 'authorization';
  readonly name: string;
  readonly password: string;
  /** The decoded `name:password`, the key of the verified-credential cache. */
  readonly secret: string;
}

export type CredentialResult =
  | { readonly kind: 'ok'; readonly credential: Credential }
  | { readonly kind: 'missing' }
  | { readonly kind: 'malformed' }
  | { readonly kind: 'too-long'; readonly name: string };

export const NAME_MAX_LENGTH = 64;
export const PASSWORD_MAX_BYTES = 1024;

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const utf8 = new TextDecoder('utf-8', { fatal: true });

type Headers = Readonly<Record<string, string | string[] | undefined>>;

/**
 * Reads the credential (RFC 7617, UTF-8). `security` wins over `Authorization`; in `security` the word
 * `Basic` may be left out.
 */
export function readCredential(headers: Headers): CredentialResult {
  const security = single(headers.security);
  if (security !== undefined) {
    const value = security.trim();
    const encoded = /^basic\s/i.test(value) ? value.slice(6).trim() : value;
    return decode(encoded, 'security');
  }
  const authorization = single(headers.authorization);
  if (authorization === undefined) return { kind: 'missing' };
  const match = /^basic\s+(\S+)\s*$/i.exec(authorization);
  return match?.[1] === undefined ? { kind: 'malformed' } : decode(match[1], 'authorization');
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function decode(encoded: string, source: Credential['source']): CredentialResult {
  // A 1024-byte password and a 64-character name fit in well under 2 KiB of base64 of UTF-8.
  if (encoded.length === 0) return { kind: 'missing' };
  if (encoded.length > 2048 || encoded.length % 4 === 1 || !BASE64.test(encoded)) return { kind: 'malformed' };
  let secret: string;
  try {
    secret = utf8.decode(Buffer.from(encoded, 'base64'));
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
  return { kind: 'ok', credential: { source, name, password, secret } };
}
