import { Type, type TSchema } from '@sinclair/typebox';
import type { ValidateFunction } from 'ajv';
import type { Limits } from '../config.js';
import { createValidatorCompiler, formatValidationError } from '../http/validation.js';
import { newPlaylistSchema } from './playlist.schemas.js';
import { looseRulesSchema } from '../smart/rules.js';

/**
 * What an edit may carry, taken from create's own schema (`newPlaylist`) and checked by the validator the routes
 * use, so that a name or a song id an edit refuses is one that create refuses, with the same sentence. The songs
 * limit is not among them: an edit over it is a conflict (the writer's `tooManySongs`), where create's body is a 400.
 */
export function editSchemas(limits: Limits) {
  const { name, songIds } = newPlaylistSchema(limits).properties;
  const songId = songIds.items;
  const song = Type.Object({ id: songId }, { additionalProperties: false, description: 'A song: `{"id": N}`' });
  // Rules, or null to make a smart playlist an ordinary one (1.7.0); read by `readRules` after the schema.
  const rules = Type.Optional(
    Type.Union([looseRulesSchema, Type.Null()], {
      description:
        "A smart playlist's rules (`smartRules`): its songs become those they choose; `null`: an ordinary playlist that keeps its songs",
    }),
  );
  return {
    name,
    songId,
    rules,
    song,
    songs: Type.Array(song),
    mergePatch: Type.Object(
      {
        name: Type.Optional(name),
        songIds: Type.Optional(Type.Array(songId, { description: songIds.description })),
        rules,
      },
      { description: 'A partial `newPlaylist` (RFC 7396): the members sent replace those of the playlist' },
    ),
    insertSongs: Type.Object({
      songIds: Type.Array(songId, { description: 'Ids of the songs to insert, in this order; repeats are allowed' }),
      position: Type.Optional(
        Type.Integer({
          minimum: 0,
          maximum: Number.MAX_SAFE_INTEGER,
          description: 'Insert before the song at this index (0-based); default: after the last song',
        }),
      ),
    }),
  };
}

/**
 * Why an edit cannot apply, in the edit's own terms: `malformed`, the request is wrong whatever the playlist holds;
 * `conflict`, it cannot apply to the playlist as it is now. The editor answers them 400 and 409.
 */
export class EditRefused extends Error {
  override name = 'EditRefused';
  constructor(
    readonly reason: 'malformed' | 'conflict',
    message: string,
  ) {
    super(message);
  }
}

export const malformed = (message: string) => new EditRefused('malformed', message);
export const conflict = (message: string) => new EditRefused('conflict', message);

/** Checks a value against a schema; the answer is undefined or create's sentence for the first problem. */
export type Check = (data: unknown) => string | undefined;

/**
 * A JSON Patch's values, which its route's schema cannot place: `{"value": …}` for each kind of place in the playlist
 * document, so a message names the operation's member. Merge patches, PUT and inserted songs are checked by their
 * routes' schemas alone.
 */
export interface EditChecks {
  readonly value: { readonly [K in 'name' | 'songId' | 'song' | 'songs']: Check };
  /**
   * A `test` of the name, which stores nothing: the name's rules but `x-visible`, so that a name stored without a
   * visible character or with a bidirectional control can still be tested.
   */
  readonly testedName: Check;
}

const compile = createValidatorCompiler([]);

function check(schema: TSchema): Check {
  const validate = compile({ schema, method: 'PATCH', url: '/', httpPart: 'body' }) as ValidateFunction;
  return (data) => (validate(data) ? undefined : formatValidationError(validate.errors ?? [], 'body').message);
}

// Keyed by the one limit the schemas read: a process has one set of limits, tests a few.
const compiled = new Map<number, EditChecks>();

/** The checks for these limits, compiled once. */
export function editChecks(limits: Limits): EditChecks {
  let checks = compiled.get(limits.nameMaxLength);
  if (checks === undefined) {
    const schemas = editSchemas(limits);
    const value = (schema: TSchema) => check(Type.Object({ value: schema }));
    checks = {
      value: {
        name: value(schemas.name),
        songId: value(schemas.songId),
        song: value(schemas.song),
        songs: value(schemas.songs),
      },
      testedName: value({ ...schemas.name, 'x-visible': false }),
    };
    if (compiled.size >= 8) compiled.clear();
    compiled.set(limits.nameMaxLength, checks);
  }
  return checks;
}
