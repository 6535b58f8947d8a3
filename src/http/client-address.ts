import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * The key under which per-client caps (open connections, failed sign-ins, the rate limit) count an address. An IPv4
 * address is one client. An IPv6 client usually holds a whole /64 and picks any address in it, so IPv6 addresses
 * count by their first `ipv6PrefixBits` bits (`2001:db8:1:2::/64`; 128 keeps each address apart). An IPv4-mapped
 * IPv6 address (`::ffff:192.0.2.7`, as a dual-stack socket reports IPv4 clients) is the IPv4 address. Anything that
 * is not an IP address is its own key.
 */
export function clientKey(address: string, ipv6PrefixBits: number): string {
  if (isIP(address) === 0) return address;
  const parsed = ipaddr.process(address);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  if (ipv6PrefixBits >= 128) return parsed.toString();
  return `${ipaddr.IPv6.networkAddressFromCIDR(`${parsed.toString()}/${ipv6PrefixBits}`).toString()}/${ipv6PrefixBits}`;
}
