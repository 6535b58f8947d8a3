import type { FastifyReply, FastifyRequest } from 'fastify';
import type { PageQuery } from './schemas.js';

/** `X-Total-Count` and an RFC 8288 `Link` header with `next` and `prev` pages, on the path the client used. */
export function setPageHeaders(
  request: FastifyRequest,
  reply: FastifyReply,
  page: PageQuery,
  total: number,
  /** Parameters besides the page's that the links keep (those given). */
  kept: Readonly<Record<string, string | number | undefined>> = {},
): void {
  reply.header('x-total-count', String(total));
  const path = request.url.split('?')[0] ?? '/';
  const link = (offset: number, rel: string) => {
    const query = new URLSearchParams({ limit: String(page.limit), offset: String(offset) });
    if (page.search !== undefined) query.set('search', page.search);
    for (const [name, value] of Object.entries(kept)) if (value !== undefined) query.set(name, String(value));
    return `<${path}?${query.toString()}>; rel="${rel}"`;
  };
  const links: string[] = [];
  if (page.offset + page.limit < total) links.push(link(page.offset + page.limit, 'next'));
  if (page.offset > 0) links.push(link(Math.max(0, Math.min(page.offset, total) - page.limit), 'prev'));
  if (links.length > 0) reply.header('link', links.join(', '));
}

export const PAGE_HEADERS = {
  'X-Total-Count': { type: 'integer', description: 'How many items match, over all pages.' },
  Link: { type: 'string', description: 'RFC 8288 links to the `next` and `prev` pages, when there are such pages.' },
} as const;
