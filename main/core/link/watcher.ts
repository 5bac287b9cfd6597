/**
 * What the operating system says of the link, one module per OS behind one
 * interface. No OS flags a Starlink dish or a router that is metered
 * upstream: the crew's pin (settings `link.networks`) fills that gap.
 *
 *   Linux    NetworkManager's Metered property on D-Bus, followed through
 *            PropertiesChanged (nm-dbus.ts)
 *   Windows  the connection cost of the internet connection profile, read
 *            through Windows PowerShell's WinRT bridge every 10 s (windows-cost.ts)
 *   macOS    not detected: NWPath's isExpensive/isConstrained need a native
 *            helper that cannot be built or tested here (docs/link.md)
 */
import type { LinkCost } from './transitions.js';
import type { NetworkId } from './network.js';

export interface LinkReading {
  /** 'unknown': the OS does not say (then the link counts as not metered unless pinned). */
  cost: Exclude<LinkCost, 'ask'> | 'unknown';
  /** Who said so: 'NetworkManager', 'Windows', or why nobody did. */
  source: string;
  /** The network, when the OS names it (Windows: the profile); else network.ts finds it. */
  network?: NetworkId;
}

export interface LinkWatcher {
  read(): Promise<LinkReading>;
  /** Calls `onChange` with every new reading until the returned stop is called. */
  watch(onChange: (reading: LinkReading) => void): Promise<() => Promise<void>>;
}

/** The watcher of this OS. */
export async function linkWatcherFor(platform: NodeJS.Platform = process.platform): Promise<LinkWatcher> {
  if (platform === 'linux') return new (await import('./nm-dbus.js')).NetworkManagerWatcher();
  if (platform === 'win32') return new (await import('./windows-cost.js')).WindowsCostWatcher();
  return {
    read: () =>
      Promise.resolve({
        cost: 'unknown',
        source:
          platform === 'darwin'
            ? 'macOS (not detected: pin the network)'
            : `${platform} (not detected: pin the network)`,
      }),
    watch: () => Promise.resolve(() => Promise.resolve()),
  };
}
