import { Type } from '@sinclair/typebox';
import { expiresAtSchema } from '../http/times.js';

/** The longest name a token may have, in characters. */
export const TOKEN_NAME_MAX_LENGTH = 100;

// Control characters (C0, DEL, C1) and unpaired surrogates anywhere, or nothing but white space, is refused, as in a
// playlist's name.
const CONTROL = '\\u0000-\\u001F\\u007F-\\u009F\\uD800-\\uDFFF';
const NAME_PATTERN = `^[^${CONTROL}]*[^\\s${CONTROL}][^${CONTROL}]*$`;

const Scope = Type.Unsafe<'read' | 'write'>({
  type: 'string',
  enum: ['read', 'write'],
  description:
    '`read`: every GET, the change feed, its stream and tickets, and revoking itself; `write`: whatever the user may do, but make or list tokens',
});

const id = Type.Integer({ description: 'Token id' });
const name = Type.String({ description: 'The name given to the token: which app holds it' });
const createdAt = Type.String({ description: 'When the token was made: RFC 3339, UTC, with milliseconds' });
const expiresAt = Type.String({ description: 'When the token stops working: RFC 3339, UTC, with milliseconds' });

export const NewTokenBody = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: TOKEN_NAME_MAX_LENGTH,
      pattern: NAME_PATTERN,
      'x-message': 'must not be blank or contain control characters or unpaired surrogates',
      'x-visible': true,
      description: 'Which app will hold it, as you will see it in the list',
      examples: ['Phone'],
    }),
    scope: Scope,
    expiresAt: expiresAtSchema(
      'When it stops working: an RFC 3339 date and time in the future, at most a year ahead; absent: a year from now',
    ),
  },
  { additionalProperties: false, description: 'The new token' },
);

export const NewToken = Type.Object({
  id,
  name,
  scope: Scope,
  createdAt,
  expiresAt,
  token: Type.String({
    description:
      'The token, `mixtape_` and 43 characters: shown in this answer only (the service keeps its SHA-256, never the token). Send it as `Authorization: Bearer …`.',
  }),
});

export const AppToken = Type.Object({
  id,
  name,
  scope: Scope,
  createdAt,
  expiresAt,
  lastUsedAt: Type.Union([Type.String(), Type.Null()], {
    description: 'When it was last used, to the minute: RFC 3339, UTC, with milliseconds; null: never',
  }),
});

// As every id in a path (http/schemas.ts `Id`, a floor above this one).
export const TokenParams = Type.Object({
  tokenId: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'Token id' }),
});
