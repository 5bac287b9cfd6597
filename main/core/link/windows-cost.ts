/**
 * Windows: the connection cost of the internet connection profile
 * (Windows.Networking.Connectivity.NetworkInformation), as OneDrive reads it:
 * NetworkCostType Unrestricted / Fixed / Variable, Roaming, OverDataLimit.
 * Fixed and Variable are metered (the crew set "metered connection" on the
 * Wi-Fi, or a cellular plan); Roaming and OverDataLimit hold everything.
 *
 * Read through Windows PowerShell 5.1 (powershell.exe, on every Windows; its
 * WinRT bridge is gone from PowerShell 7), every 10 s: the cost has a change
 * event only for WinRT apps, not for a script. The script prints one JSON
 * line; parseCostOutput reads it (tested here on its text: Windows cannot
 * run on this machine).
 */
import { execFile } from 'node:child_process';
import type { LinkReading, LinkWatcher } from './watcher.js';

export const POLL_MS = 10_000;

export const COST_SCRIPT = [
  '$ErrorActionPreference = "Stop"',
  '[void][Windows.Networking.Connectivity.NetworkInformation,Windows.Networking.Connectivity,ContentType=WindowsRuntime]',
  '$p = [Windows.Networking.Connectivity.NetworkInformation]::GetInternetConnectionProfile()',
  'if ($null -eq $p) { "{}"; exit 0 }',
  '$c = $p.GetConnectionCost()',
  '@{ profile = [string]$p.ProfileName; cost = [string]$c.NetworkCostType; roaming = [bool]$c.Roaming; overDataLimit = [bool]$c.OverDataLimit; approachingDataLimit = [bool]$c.ApproachingDataLimit } | ConvertTo-Json -Compress',
].join('; ');

/** NetworkCostType as PowerShell prints it: its name, or its number (0 Unknown, 1 Unrestricted, 2 Fixed, 3 Variable). */
const COST_NAMES = ['Unknown', 'Unrestricted', 'Fixed', 'Variable'];

/** The script's output to a reading; anything unexpected is 'unknown', saying what came. */
export function parseCostOutput(stdout: string): LinkReading {
  const text = stdout.trim();
  let json: Record<string, unknown>;
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return { cost: 'unknown', source: `Windows (unreadable answer: ${text.slice(0, 80) || 'nothing'})` };
  }
  if (typeof json !== 'object' || json === null || !('cost' in json)) {
    return { cost: 'unknown', source: 'Windows (no internet connection)' };
  }
  const raw = json.cost;
  const cost = typeof raw === 'number' ? COST_NAMES[raw] : typeof raw === 'string' ? raw : undefined;
  const profile = typeof json.profile === 'string' ? json.profile : '';
  const network = profile ? { network: { key: `profile ${profile}`, label: profile } } : {};
  const source = 'Windows';
  if (json.overDataLimit === true) return { cost: 'over-limit', source, ...network };
  if (json.roaming === true) return { cost: 'roaming', source, ...network };
  if (cost === 'Fixed' || cost === 'Variable') return { cost: 'metered', source, ...network };
  if (cost === 'Unrestricted') return { cost: 'unmetered', source, ...network };
  return { cost: 'unknown', source: `Windows (cost ${String(raw)})`, ...network };
}

export class WindowsCostWatcher implements LinkWatcher {
  read(): Promise<LinkReading> {
    return new Promise((resolve) => {
      execFile(
        'powershell.exe',
        ['-NoProfile', '-NonInteractive', '-Command', COST_SCRIPT],
        { timeout: 15_000, windowsHide: true },
        (err, stdout) => {
          if (err) resolve({ cost: 'unknown', source: `Windows (PowerShell failed: ${err.message})` });
          else resolve(parseCostOutput(stdout));
        },
      );
    });
  }

  watch(onChange: (reading: LinkReading) => void): Promise<() => Promise<void>> {
    let last = '';
    let stopped = false;
    const look = async (): Promise<void> => {
      const r = await this.read();
      const sig = `${r.cost} ${r.network?.key ?? ''}`;
      if (!stopped && sig !== last) {
        last = sig;
        onChange(r);
      }
    };
    void look();
    const timer = setInterval(() => void look(), POLL_MS);
    timer.unref();
    return Promise.resolve(() => {
      stopped = true;
      clearInterval(timer);
      return Promise.resolve();
    });
  }
}
