/**
 * Linux: NetworkManager's `Metered` property (org.freedesktop.NetworkManager
 * on /org/freedesktop/NetworkManager, an NMMetered: 0 unknown, 1 yes, 2 no,
 * 3 guess-yes, 4 guess-no) on the system bus, followed through its
 * PropertiesChanged signal. YES and GUESS_YES are metered (NetworkManager
 * guesses yes for a phone's hotspot it recognises, and for mobile broadband).
 * It says nothing of roaming or data limits.
 *
 * Client: @jellybrick/dbus-next, pure JavaScript (no native module to build
 * for Electron, no gdbus/busctl process to spawn and whose text to parse;
 * the kept fork of dbus-next, whose last release is from 2021).
 */
import * as dbus from '@jellybrick/dbus-next';
import type { LinkReading, LinkWatcher } from './watcher.js';

const NM = 'org.freedesktop.NetworkManager';
const NM_PATH = '/org/freedesktop/NetworkManager';
const PROPS = 'org.freedesktop.DBus.Properties';
const ASK_TIMEOUT_MS = 5000;
/**
 * The part of NetworkManager's introspection we use, given to the client so
 * it does not introspect: asking a name that is not on the bus (NetworkManager
 * not running) then fails on our call, where we catch it, not inside the
 * library's introspection (an unhandled rejection there ends the process).
 */
const NM_XML = `<node>
  <interface name="${PROPS}">
    <method name="Get"><arg direction="in" type="s"/><arg direction="in" type="s"/><arg direction="out" type="v"/></method>
    <signal name="PropertiesChanged"><arg type="s"/><arg type="a{sv}"/><arg type="as"/></signal>
  </interface>
</node>`;

/** NMMetered to the link's cost. */
export function costOfMetered(value: number): LinkReading['cost'] {
  if (value === 1 || value === 3) return 'metered';
  if (value === 2 || value === 4) return 'unmetered';
  return 'unknown';
}

function withTimeout<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${what} did not answer within ${ASK_TIMEOUT_MS / 1000} s`)),
      ASK_TIMEOUT_MS,
    );
    // A question the bus failed first (no system bus at all) must not keep a finished command alive.
    timer.unref();
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

interface NmProperties {
  Get(iface: string, property: string): Promise<dbus.Variant<number>>;
}

export class NetworkManagerWatcher implements LinkWatcher {
  /** `busAddress`: a bus other than the system bus (tests: a private dbus-daemon). */
  constructor(private readonly busAddress?: string) {}

  private connect(): { bus: dbus.MessageBus; failed: Promise<never> } {
    const bus = this.busAddress ? dbus.sessionBus({ busAddress: this.busAddress }) : dbus.systemBus();
    // A bus that cannot be reached emits 'error': the question fails at once, saying why.
    const failed = new Promise<never>((_, reject) =>
      (bus as unknown as NodeJS.EventEmitter).on('error', (err: Error) => reject(err)),
    );
    failed.catch(() => undefined);
    return { bus, failed };
  }

  private async ask({
    bus,
    failed,
  }: {
    bus: dbus.MessageBus;
    failed: Promise<never>;
  }): Promise<{ reading: LinkReading; props: dbus.ProxyInterface }> {
    const obj = await Promise.race([
      withTimeout(bus.getProxyObject(NM, NM_PATH, NM_XML), 'NetworkManager'),
      failed,
    ]);
    const props = obj.getInterface(PROPS);
    const asked = (props as unknown as NmProperties).Get(NM, 'Metered');
    const value = await Promise.race([withTimeout(asked, 'NetworkManager'), failed]);
    return { reading: { cost: costOfMetered(value.value), source: 'NetworkManager' }, props };
  }

  private static unreachable(err: unknown): LinkReading {
    const why = (err as Error).message || String(err);
    return { cost: 'unknown', source: `NetworkManager not reachable (${why})` };
  }

  async read(): Promise<LinkReading> {
    const conn = this.connect();
    const { bus } = conn;
    try {
      return (await this.ask(conn)).reading;
    } catch (err) {
      return NetworkManagerWatcher.unreachable(err);
    } finally {
      bus.disconnect();
    }
  }

  async watch(onChange: (reading: LinkReading) => void): Promise<() => Promise<void>> {
    const conn = this.connect();
    const { bus } = conn;
    let last: LinkReading['cost'] | null = null;
    const tell = (r: LinkReading): void => {
      if (r.cost === last) return;
      last = r.cost;
      onChange(r);
    };
    try {
      const { reading, props } = await this.ask(conn);
      props.on('PropertiesChanged', (iface: unknown, changed: unknown) => {
        if (iface !== NM) return;
        const metered = (changed as Record<string, dbus.Variant<number> | undefined>).Metered;
        if (metered) tell({ cost: costOfMetered(metered.value), source: 'NetworkManager' });
      });
      tell(reading);
    } catch (err) {
      tell(NetworkManagerWatcher.unreachable(err));
    }
    return () => {
      bus.disconnect();
      return Promise.resolve();
    };
  }
}
