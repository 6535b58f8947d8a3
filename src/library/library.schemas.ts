import { Type, type Static, type TSchema } from '@sinclair/typebox';
import type { Limits } from '../config.js';
import { MEMBER_ROLES } from '../domain/roles.js';
import { Id } from '../http/schemas.js';
import { nameRule } from '../playlists/playlist.schemas.js';
import { FOLDER_DEPTH_MAX } from './library.service.js';

const MAX_ID = Number.MAX_SAFE_INTEGER;

/** A folder's id, or null for the top level: one type, so that a wrong value is one sentence naming the field. */
const FolderOrTop = (description: string) =>
  Type.Unsafe<number | null>({ type: ['integer', 'null'], minimum: 1, maximum: MAX_ID, description });

/** An item of a folder (or of the top level) as `after` and `before` name it. */
const Anchor = (description: string) =>
  Type.Object(
    {
      folder: Type.Optional(Id('A folder of yours')),
      playlist: Type.Optional(Id('A playlist you may read')),
    },
    {
      additionalProperties: false,
      description: `${description}: \`{"folder": F}\` or \`{"playlist": P}\`, an item of the same folder (or of the top level)`,
    },
  );

const placing = {
  after: Type.Optional(Anchor('Placed right after this item')),
  before: Type.Optional(Anchor('Placed right before this item')),
};

const folderName = (limits: Limits) =>
  Type.String({ ...nameRule(limits), description: 'The folder’s name, stored exactly as sent (as a playlist’s)' });

export function newFolderSchema(limits: Limits) {
  return Type.Object(
    {
      name: folderName(limits),
      parent: Type.Optional(FolderOrTop('The folder to make it in; absent or `null`: the top level')),
      ...placing,
    },
    {
      description: `A new folder; neither \`after\` nor \`before\`: at the end. Folders nest ${FOLDER_DEPTH_MAX} deep`,
    },
  );
}

export function folderEditSchema(limits: Limits) {
  return Type.Object(
    {
      name: Type.Optional(folderName(limits)),
      parent: Type.Optional(FolderOrTop('Move it into this folder; `null`: to the top level')),
      ...placing,
    },
    {
      description:
        'What to change: its name, or where it is (`parent`, absent: where it is; `after` or `before`, neither: at the end)',
    },
  );
}

export const PlaceBody = Type.Object(
  {
    folder: FolderOrTop('The folder of yours to file it in; `null`: the top level'),
    ...placing,
  },
  { description: 'Where to file the playlist; neither `after` nor `before`: at the end' },
);
export type PlaceBody = Static<typeof PlaceBody>;

export const FolderParams = Type.Object({ folderId: Id('Folder id') });

export const FolderAnswer = Type.Object(
  {
    id: Type.Integer({ description: 'Folder id' }),
    name: Type.String({ description: 'Folder name' }),
    parent: Type.Union([Type.Integer(), Type.Null()], { description: 'The folder it is in; `null`: the top level' }),
  },
  { description: 'The folder' },
);

const PlaylistItem = Type.Object(
  {
    playlist: Type.Integer({ description: 'Playlist id' }),
    name: Type.String({ description: 'Playlist name' }),
    owner: Type.Optional(Type.String({ description: 'A shared playlist’s owner’s name (none for your own)' })),
    role: Type.Optional(
      Type.Union(
        MEMBER_ROLES.map((role) => Type.Literal(role)),
        { description: 'Your role on a shared playlist (none for your own)' },
      ),
    ),
  },
  { description: 'A playlist you may read' },
);

/** The tree's items: a folder holds items in turn (a `$ref` to itself). */
export const LibraryItem = Type.Union(
  [
    Type.Object(
      {
        folder: Type.Integer({ description: 'Folder id' }),
        name: Type.String({ description: 'Folder name' }),
        items: Type.Array(Type.Ref('libraryItem') as TSchema, { description: 'What it holds, in your order' }),
      },
      { description: 'One of your folders' },
    ),
    PlaylistItem,
  ],
  { $id: 'libraryItem', title: 'libraryItem', description: 'A folder of yours, or a playlist you may read' },
);

export const LibraryTree = Type.Object(
  {
    version: Type.Integer({
      minimum: 0,
      description: 'Changes whenever anything the tree shows changes; the change feed’s `types=library` items carry it',
    }),
    items: Type.Array(Type.Ref('libraryItem') as TSchema, { description: 'The top level, in your order' }),
  },
  { description: 'Your folders and the playlists you may read, in your order' },
);
