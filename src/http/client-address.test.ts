import { describe, expect, it } from 'vitest';
import { clientKey } from './client-address.js';

describe('clientKey', () => {
  it('keys an IPv4 client by its address, also when a dual-stack socket reports it IPv4-mapped', () => {
    for (const bits of [32, 64, 128]) {
      expect(clientKey('192.0.2.7', bits)).toBe('192.0.2.7');
      expect(clientKey('::ffff:192.0.2.7', bits)).toBe('192.0.2.7');
      expect(clientKey('::FFFF:c000:207', bits)).toBe('192.0.2.7');
    }
    expect(clientKey('192.0.2.8', 64)).not.toBe(clientKey('192.0.2.7', 64));
  });

  it('keys an IPv6 client by its /64 by default, whatever the spelling of the address', () => {
    const key = clientKey('2001:db8:1:2::1', 64);
    expect(key).toBe('2001:db8:1:2::/64');
    for (const same of ['2001:db8:1:2:ffff:ffff:ffff:ffff', '2001:DB8:1:2:0:0:0:abcd', '2001:0db8:0001:0002::9']) {
      expect(clientKey(same, 64), same).toBe(key);
    }
    expect(clientKey('2001:db8:1:3::1', 64)).not.toBe(key);
    expect(clientKey('fe80::1%eth0', 64)).toBe('fe80::/64');
    expect(clientKey('::1', 64)).toBe('::/64');
  });

  it('takes another prefix length, 128 keeping every address apart', () => {
    expect(clientKey('2001:db8:1:2ff::1', 56)).toBe('2001:db8:1:200::/56');
    expect(clientKey('2001:db8:1:2ff::1', 48)).toBe(clientKey('2001:db8:1:ffff::1', 48));
    expect(clientKey('2001:db8:1:2::1', 128)).toBe('2001:db8:1:2::1');
    expect(clientKey('2001:DB8:1:2:0::1', 128)).toBe('2001:db8:1:2::1');
    expect(clientKey('2001:db8:1:2::2', 128)).not.toBe(clientKey('2001:db8:1:2::1', 128));
  });

  it('keeps anything that is not an IP address as it is', () => {
    for (const value of ['', 'unknown', '0177.0.0.1', '2001:db8::zz']) expect(clientKey(value, 64)).toBe(value);
  });
});
