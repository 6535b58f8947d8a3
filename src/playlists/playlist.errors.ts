import { ApiError } from '../http/errors.js';

/** 422 naming the song ids the catalog does not have (the first twenty, and how many more). */
export function notInCatalog(unknown: readonly number[]): ApiError {
  const shown = unknown.slice(0, 20).join(', ');
  const more = unknown.length > 20 ? ` and ${unknown.length - 20} more` : '';
  return ApiError.unprocessable(
    `${unknown.length === 1 ? 'This song id is' : 'These song ids are'} not in the catalog: ${shown}${more}.`,
  );
}

/** 409 for a create (or a deleted playlist's restore) past the owner's playlist quota. */
export function quotaReached(quota: number): ApiError {
  return ApiError.conflict(`You have reached the limit of ${quota} playlists; delete one to make room.`);
}
