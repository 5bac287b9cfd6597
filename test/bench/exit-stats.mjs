// Preloaded into the agent by the benchmark (node --import): at exit, writes
// process.resourceUsage() (exact CPU time and peak RSS) to $DMS_BENCH_STATS.
import fs from 'node:fs';

const file = process.env.DMS_BENCH_STATS;
if (file) {
  process.on('exit', () => {
    try {
      fs.writeFileSync(file, JSON.stringify(process.resourceUsage()));
    } catch {
      // the benchmark falls back to what it polled
    }
  });
}
