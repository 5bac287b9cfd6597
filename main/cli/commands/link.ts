/**
 * `link`: the network the agent is on, and what uploads may do over it
 * (docs/link.md). Registered here; run by link-run.ts, loaded when used.
 */
import type { Command } from 'commander';
import type { LinkFlags } from './link-run.js';

const run = () => import('./link-run.js');

export function registerLink(program: Command): void {
  const link = program
    .command('link')
    .description('the network: metered or not, what uploads may do over it, budget, bandwidth timetable');
  const common = (cmd: Command): Command =>
    cmd
      .option('--state <dir>', 'state folder (env DMS_STATE_DIR)')
      .option(
        '--network <key>',
        'another network than the one this computer is on (its key, from `link status`)',
      );

  common(link.command('status'))
    .description('what the system says of this network, your pin, what goes, the budget and the limit')
    .option('--json', 'machine-readable output')
    .action(async (opts: LinkFlags) => {
      process.exitCode = await (await run()).linkStatus(opts);
    });

  common(link.command('pin').argument('<how>', 'metered, unmetered, ask, or none'))
    .description(
      'say what this network is, over what the system says (Starlink and routers are flagged by none)',
    )
    .option('--label <name>', 'a name for this network, e.g. "Starlink van"')
    .action(async (how: string, opts: LinkFlags) => {
      process.exitCode = await (await run()).linkPin(how, opts);
    });

  common(link.command('budget').argument('<size>', 'e.g. 5G or 500M, or off'))
    .description('a data budget for this network; past it nothing more is uploaded over it')
    .option('--per <period>', 'day or month', 'month')
    .action(async (size: string, opts: LinkFlags) => {
      process.exitCode = await (await run()).linkBudget(size, opts);
    });

  common(
    link
      .command('limit')
      .argument('<timetable>', 'rclone --bwlimit syntax, e.g. "08:00,512k 23:00,off", or none'),
  )
    .description('bandwidth limit or timetable; a running agent follows within 10 s')
    .action(async (timetable: string, opts: LinkFlags) => {
      process.exitCode = (await run()).linkLimit(timetable, opts);
    });

  common(link.command('answer').argument('<answer>', 'yes or no'))
    .description('upload everything over this network (yes), or only what the link allows (no)')
    .action(async (answer: string, opts: LinkFlags) => {
      process.exitCode = await (await run()).linkAnswer(answer, opts);
    });
}
