import { describe, expect, it } from 'vitest';
import { clientKey } from './connections.js';

describe('clientKey', () => {
  it('counts an IPv4 client by its address and an IPv6 one by its /64', () => {
    expect(clientKey('10.0.0.1')).toBe('10.0.0.1');
    expect(clientKey('::ffff:10.0.0.1')).toBe('10.0.0.1');
    expect(clientKey('2001:db8:1:2:3:4:5:6')).toBe('2001:db8:1:2::/64');
    expect(clientKey('2001:0db8:0001:0002::7')).toBe('2001:db8:1:2::/64');
    expect(clientKey('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(clientKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(clientKey('::1')).toBe('0:0:0:0::/64');
    expect(clientKey(undefined)).toBe('unknown');
  });
});
