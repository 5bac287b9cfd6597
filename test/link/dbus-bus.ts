/**
 * A private D-Bus message bus (Debian's dbus-daemon, package `dbus`) on a
 * socket in a temporary folder, and a stand-in NetworkManager on it that
 * publishes org.freedesktop.NetworkManager's Metered property and signals its
 * changes as the real one does (PropertiesChanged on
 * org.freedesktop.DBus.Properties).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as dbus from '@jellybrick/dbus-next';

/**
 * Why the D-Bus tests cannot run here (they then skip), or null. With
 * DMS_REQUIRE_DBUS=1 (CI's D-Bus suites, .ci/run) a missing dbus-daemon is a
 * failure, never a quiet skip.
 */
export function dbusDaemonMissing(): string | null {
  const r = spawnSync('dbus-daemon', ['--version'], { encoding: 'utf8' });
  const why = r.status === 0 ? null : 'dbus-daemon is not installed (Debian: apt-get install -y dbus)';
  if (why && process.env.DMS_REQUIRE_DBUS === '1')
    throw new Error(`${why}; DMS_REQUIRE_DBUS=1 says these tests must run here`);
  return why;
}

export interface PrivateBus {
  address: string;
  stop(): Promise<void>;
}

export async function startPrivateBus(): Promise<PrivateBus> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-dbus-'));
  const socket = path.join(dir, 'bus');
  const conf = path.join(dir, 'bus.conf');
  fs.writeFileSync(
    conf,
    `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=${socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
`,
  );
  const child: ChildProcess = spawn('dbus-daemon', ['--config-file', conf, '--nofork', '--print-address'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const address = await new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error('dbus-daemon did not start within 10 s')), 10_000);
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const line = out.split('\n')[0];
      if (out.includes('\n') && line) {
        clearTimeout(timer);
        resolve(line.trim());
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`dbus-daemon exited (${code})`));
    });
  });
  return {
    address,
    stop: async () => {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

class NetworkManagerStandIn extends dbus.interface.Interface {
  Metered = 0;
  constructor() {
    super('org.freedesktop.NetworkManager');
  }
}
NetworkManagerStandIn.configureMembers({
  properties: { Metered: { signature: 'u', access: dbus.interface.ACCESS_READ } },
});

export interface StandIn {
  setMetered(value: number): void;
  stop(): void;
}

/** Owns org.freedesktop.NetworkManager on the bus, Metered = `metered` (an NMMetered). */
export async function startNetworkManager(address: string, metered: number): Promise<StandIn> {
  const bus = dbus.sessionBus({ busAddress: address });
  await bus.requestName('org.freedesktop.NetworkManager', 0);
  const nm = new NetworkManagerStandIn();
  // The library's constructor sets these on the instance, hiding what
  // configureMembers put on the prototype (@jellybrick/dbus-next 0.11.3).
  for (const k of ['$properties', '$methods', '$signals'] as const) delete (nm as Partial<typeof nm>)[k];
  nm.Metered = metered;
  bus.export('/org/freedesktop/NetworkManager', nm);
  return {
    setMetered: (value) => {
      nm.Metered = value;
      dbus.interface.Interface.emitPropertiesChanged(nm, { Metered: value }, []);
    },
    stop: () => bus.disconnect(),
  };
}
