import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { linuxNetwork, networkFromProc } from './network.js';

const ROUTE = `Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
wlan0\t00000000\t0101A8C0\t0003\t0\t0\t600\t00000000\t0\t0\t0
usb0\t00000000\t012BA8C0\t0003\t0\t0\t100\t00000000\t0\t0\t0
usb0\t002BA8C0\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0
`;
const ARP = `IP address       HW type     Flags       HW address            Mask     Device
192.168.43.1     0x1         0x2         02:11:22:33:44:55     *        usb0
192.168.1.1      0x1         0x2         a4:91:b1:00:00:01     *        wlan0
192.168.43.7     0x1         0x0         00:00:00:00:00:00     *        usb0
`;

describe('which network (Linux /proc/net/route and /proc/net/arp)', () => {
  it('the default route with the lowest metric, and its gateway hardware address', () => {
    expect(networkFromProc(ROUTE, ARP)).toEqual({
      key: 'usb0 192.168.43.1 02:11:22:33:44:55',
      label: 'usb0 via 192.168.43.1',
    });
  });

  it('a gateway not in the ARP table yet; no default route', () => {
    expect(networkFromProc(ROUTE, ARP.split('\n')[0] ?? '').key).toBe('usb0 192.168.43.1 ?');
    expect(networkFromProc(ROUTE.split('\n').slice(0, 1).join('\n'), ARP)).toEqual({
      key: '',
      label: 'no network',
    });
  });

  it.skipIf(!fs.existsSync('/proc/net/route'))('reads this machine’s tables', () => {
    const id = linuxNetwork();
    expect(typeof id.key).toBe('string');
    if (id.key) expect(id.label).toMatch(/ via \d+\.\d+\.\d+\.\d+$/);
  });
});
