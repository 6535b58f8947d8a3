import { Type, type Static } from '@sinclair/typebox';
import type { Limits } from '../config.js';
import { searchParameter } from '../search/bounded-search.js';

/** Request schemas shared by the features. */

const MAX_ID = Number.MAX_SAFE_INTEGER;

/** A positive integer id below 2^53. */
export const Id = (description: string) => Type.Integer({ minimum: 1, maximum: MAX_ID, description });

export function pageQuerySchema(limits: Limits, searchDescription: string) {
  return Type.Object({
    limit: Type.Integer({
      minimum: 1,
      maximum: limits.pageMax,
      default: limits.pageDefault,
      description: 'Number of items to return',
    }),
    offset: Type.Integer({
      minimum: 0,
      maximum: 2 ** 31 - 1,
      default: 0,
      description: 'Index of the first item to return; 0 starts at the beginning, 10 skips the first 10',
    }),
    search: searchParameter(limits.searchMaxLength, searchDescription),
  });
}
export type PageQuery = Static<ReturnType<typeof pageQuerySchema>>;
