/**
 * Which network the agent is on, so the crew's pin, answer and budget stay
 * with it: the default route's interface and gateway, and the gateway's
 * hardware address (a phone hotspot and the office router may both be
 * 192.168.1.1; their hardware addresses differ). On Linux from
 * /proc/net/route and /proc/net/arp; elsewhere the watcher says (Windows:
 * the connection profile's name).
 */
import fs from 'node:fs';

export interface NetworkId {
  /** Stable key: "eth0 192.168.1.1 02:fc:00:00:00:05"; '' when there is no default route. */
  key: string;
  /** For the crew: "wlan0 via 192.168.1.1". */
  label: string;
}

export const NO_NETWORK: NetworkId = { key: '', label: 'no network' };

/** A little-endian hex IPv4 address of /proc/net/route ("010200C0" -> 192.0.2.1). */
function hexIp(hex: string): string {
  const n = Number.parseInt(hex, 16);
  return [n & 0xff, (n >>> 8) & 0xff, (n >>> 16) & 0xff, (n >>> 24) & 0xff].join('.');
}

/** The default route with the lowest metric: its interface and gateway. */
export function defaultRoute(routeText: string): { iface: string; gateway: string } | null {
  let best: { iface: string; gateway: string; metric: number } | null = null;
  for (const line of routeText.split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 8) continue;
    const [iface = '', dest, gw = '', flags = '0', , , metric = '0', mask] = f;
    const up = (Number.parseInt(flags, 16) & 0x1) !== 0;
    if (dest !== '00000000' || mask !== '00000000' || !up) continue;
    const m = Number(metric);
    if (!best || m < best.metric) best = { iface, gateway: hexIp(gw), metric: m };
  }
  return best && { iface: best.iface, gateway: best.gateway };
}

/** The hardware address of `ip` on `iface` in /proc/net/arp (complete entries only). */
export function arpAddress(arpText: string, ip: string, iface: string): string | null {
  for (const line of arpText.split('\n').slice(1)) {
    const [addr, , flags = '0', hw, , dev] = line.trim().split(/\s+/);
    if (addr === ip && dev === iface && (Number.parseInt(flags, 16) & 0x2) !== 0) return hw ?? null;
  }
  return null;
}

export function networkFromProc(routeText: string, arpText: string): NetworkId {
  const route = defaultRoute(routeText);
  if (!route) return NO_NETWORK;
  const hw = arpAddress(arpText, route.gateway, route.iface);
  return {
    key: [route.iface, route.gateway, hw ?? '?'].join(' '),
    label: `${route.iface} via ${route.gateway}`,
  };
}

/** Linux: the network of the default route, read now. */
export function linuxNetwork(): NetworkId {
  try {
    return networkFromProc(
      fs.readFileSync('/proc/net/route', 'utf8'),
      fs.readFileSync('/proc/net/arp', 'utf8'),
    );
  } catch {
    return NO_NETWORK;
  }
}
