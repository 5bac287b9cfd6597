/**
 * Windows' connection cost, tested on the text its PowerShell script prints:
 * Windows (and its WinRT) cannot run on this machine, so the call itself is
 * not made here; these are the shapes Windows PowerShell 5.1 prints.
 */
import { describe, expect, it } from 'vitest';
import { COST_SCRIPT, parseCostOutput } from './windows-cost.js';

const line = (o: Record<string, unknown>): string =>
  JSON.stringify({
    profile: 'Pixel hotspot',
    roaming: false,
    overDataLimit: false,
    approachingDataLimit: false,
    ...o,
  }) + '\r\n';

describe('Windows connection cost (parsing; Windows cannot run here)', () => {
  it('Unrestricted is not metered; Fixed and Variable are; the profile names the network', () => {
    expect(parseCostOutput(line({ cost: 'Unrestricted' }))).toEqual({
      cost: 'unmetered',
      source: 'Windows',
      network: { key: 'profile Pixel hotspot', label: 'Pixel hotspot' },
    });
    expect(parseCostOutput(line({ cost: 'Fixed' })).cost).toBe('metered');
    expect(parseCostOutput(line({ cost: 'Variable' })).cost).toBe('metered');
    // An enum printed as its number (ConvertTo-Json without [string]).
    expect(parseCostOutput(line({ cost: 3 })).cost).toBe('metered');
    expect(parseCostOutput(line({ cost: 1 })).cost).toBe('unmetered');
  });

  it('roaming or over the data limit come before the cost type', () => {
    expect(parseCostOutput(line({ cost: 'Unrestricted', roaming: true })).cost).toBe('roaming');
    expect(parseCostOutput(line({ cost: 'Variable', roaming: true, overDataLimit: true })).cost).toBe(
      'over-limit',
    );
    expect(parseCostOutput(line({ cost: 'Fixed', approachingDataLimit: true })).cost).toBe('metered');
  });

  it('no internet profile, an unknown cost, or text that is not the script output: unknown, saying what came', () => {
    expect(parseCostOutput('{}\r\n')).toEqual({
      cost: 'unknown',
      source: 'Windows (no internet connection)',
    });
    expect(parseCostOutput(line({ cost: 'Unknown' })).cost).toBe('unknown');
    expect(
      parseCostOutput('Unable to find type [Windows.Networking.Connectivity.NetworkInformation].'),
    ).toEqual({
      cost: 'unknown',
      source:
        'Windows (unreadable answer: Unable to find type [Windows.Networking.Connectivity.NetworkInformation].)',
    });
    expect(parseCostOutput('').source).toBe('Windows (unreadable answer: nothing)');
  });

  it('the script asks the internet connection profile for its cost, and prints strings, not enum numbers', () => {
    expect(COST_SCRIPT).toContain('GetInternetConnectionProfile()');
    expect(COST_SCRIPT).toContain('[string]$c.NetworkCostType');
    expect(COST_SCRIPT).toContain('ConvertTo-Json -Compress');
  });
});
