import type { Config } from '../config.js';

/** Fastify's `trustProxy` from the setting: a hop count trusts that many proxies nearest the service. */
export function trustProxy(
  setting: Config['trustProxy'],
): boolean | string[] | ((address: string, hop: number) => boolean) {
  if (typeof setting === 'number') return (_address, hop) => hop < setting;
  return setting === false ? false : [...setting];
}
