import type { FastifyReply } from 'fastify';

/**
 * Adds request headers to the answer's `Vary` (RFC 9110 §12.5.5), each once: a cache then keeps one answer per value
 * of each. Names already listed, in any case, and a `Vary: *` are left as they are.
 */
export function addVary(reply: FastifyReply, ...names: string[]): void {
  const current = reply.getHeader('vary');
  if (current === undefined) {
    reply.header('vary', names.join(', '));
    return;
  }
  const listed = Array.isArray(current) ? current.join(', ') : String(current);
  const known = listed.split(',').map((name) => name.trim().toLowerCase());
  if (known.includes('*')) return;
  const added = names.filter((name) => !known.includes(name.toLowerCase()));
  if (added.length > 0) reply.header('vary', [listed, ...added].join(', '));
}
