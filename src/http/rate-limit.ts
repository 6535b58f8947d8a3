import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance } from 'fastify';
import { ApiError } from './errors.js';

/**
 * At most `perMinute` requests a minute from each client address (an IPv6 client by its first `ipv6PrefixBits`
 * bits, as `clientKey` keys it); one more answers 429 with `Retry-After`.
 */
export async function registerRateLimit(
  app: FastifyInstance,
  perMinute: number,
  ipv6PrefixBits: number,
): Promise<void> {
  await app.register(rateLimit, {
    max: perMinute,
    timeWindow: 60_000,
    ipv6Subnet: ipv6PrefixBits,
    errorResponseBuilder: (_request, context) =>
      ApiError.tooManyRequests(context.ttl / 1000, `Too many requests; the limit is ${context.max} a minute.`),
  });
}
