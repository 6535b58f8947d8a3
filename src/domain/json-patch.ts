/**
 * The JSON Patch (RFC 6902) over the playlist document `{"name", "songs": [{"id"}]}` as the API carries it: what a
 * PATCH sends (playlists/playlist-edit.operations.ts reads it) and what a diff of two versions answers (history/diff.ts).
 */

/** An operation as a patch's JSON carries it, before `readJsonPatch` reads it; what a diff of two versions answers. */
export type JsonPatchOperation =
  | { readonly op: 'add' | 'replace' | 'test'; readonly path: string; readonly value: JsonPatchValue }
  | { readonly op: 'remove'; readonly path: string }
  | { readonly op: 'move' | 'copy'; readonly from: string; readonly path: string };
/** A name, a song id, a song or the songs, as the document holds them. */
export type JsonPatchValue = string | number | { readonly id: number } | readonly { readonly id: number }[];

/**
 * At most this many operations in one patch. Reordering a whole playlist of the default 1000 songs takes at most
 * 999 moves, and a larger rewrite is one `replace` of `/songs`; each operation costs O(songs), so this bounds what
 * one request can make the event loop do (see bench/playlist-edits.ts).
 */
export const MAX_PATCH_OPERATIONS = 1000;
