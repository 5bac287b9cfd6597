/**
 * What the store keeps of flights beyond their files: the exposure logs
 * (MRK) parsed when hashed, the aircraft serial a flight's files carry, and
 * the flights the crew accepted as they are. Part of the store
 * (`queue.flights`); the MRK and serial rows are written with the file's
 * 'hashed' transition, in its transaction.
 */
import type { MrkParseResult } from '../media/mrk.js';
import type { Db } from './db.js';

export class FlightFacts {
  private readonly stmts;

  constructor(
    db: Db,
    private readonly target: () => number,
    private readonly now: () => number = Date.now,
  ) {
    this.stmts = {
      addSerial: db.prepare(
        'INSERT OR IGNORE INTO flight_serials (source_id, file_group_id, sn) VALUES (?, ?, ?)',
      ),
      serial: db.prepare<[string, string], { sn: string }>(
        'SELECT sn FROM flight_serials WHERE source_id = ? AND file_group_id = ?',
      ),
      putMrk: db.prepare(
        'INSERT INTO flight_mrk (source_id, rel_path, parsed_json) VALUES (?, ?, ?) ON CONFLICT DO UPDATE SET parsed_json = excluded.parsed_json',
      ),
      mrk: db.prepare<[string], { rel_path: string; parsed_json: string }>(
        'SELECT rel_path, parsed_json FROM flight_mrk WHERE source_id = ? ORDER BY rel_path',
      ),
      accept: db.prepare(
        'INSERT OR REPLACE INTO accepted_flights (target_id, source_id, folder, at) VALUES (?, ?, ?, ?)',
      ),
      accepted: db.prepare<[number, string], { folder: string }>(
        'SELECT folder FROM accepted_flights WHERE target_id = ? AND source_id = ? ORDER BY folder',
      ),
      summary: db.prepare<[number, string, string], { flights_json: string }>(
        'SELECT flights_json FROM flight_summaries WHERE target_id = ? AND source_id = ? AND stamp = ?',
      ),
      keepSummary: db.prepare(
        'INSERT OR REPLACE INTO flight_summaries (target_id, source_id, stamp, flights_json) VALUES (?, ?, ?, ?)',
      ),
    };
  }

  /** Called by the store inside a file's 'hashed' transition. */
  noteSerial(sourceId: string, fileGroupId: string, sn: string): void {
    this.stmts.addSerial.run(sourceId, fileGroupId, sn);
  }

  /** Called by the store inside a file's 'hashed' transition. */
  noteMrk(sourceId: string, relPath: string, parsed: MrkParseResult): void {
    this.stmts.putMrk.run(sourceId, relPath, JSON.stringify(parsed));
  }

  /** The aircraft serial another file of the same flight (file group) on this source carries. */
  serial(sourceId: string, fileGroupId: string): string | undefined {
    return this.stmts.serial.get(sourceId, fileGroupId)?.sn;
  }

  /** The exposure logs of a source, as parsed when they were hashed. */
  mrkOf(sourceId: string): Array<{ relPath: string; parsed: MrkParseResult }> {
    return this.stmts.mrk
      .all(sourceId)
      .map((r) => ({ relPath: r.rel_path, parsed: JSON.parse(r.parsed_json) as MrkParseResult }));
  }

  /** The crew accepts a flagged flight as it is (for the bound target). */
  accept(sourceId: string, folder: string): void {
    this.stmts.accept.run(this.target(), sourceId, folder, this.now());
  }

  accepted(sourceId: string): string[] {
    return this.stmts.accepted.all(this.target(), sourceId).map((r) => r.folder);
  }

  /** A source's flights (JSON) as last analysed from what `stamp` sums up, if that is what they were made from. */
  summaryOf(sourceId: string, stamp: string): string | undefined {
    return this.stmts.summary.get(this.target(), sourceId, stamp)?.flights_json;
  }

  /** Keeps a source's flights (JSON) as analysed now, with the stamp of what they were made from. */
  keepSummary(sourceId: string, stamp: string, flightsJson: string): void {
    this.stmts.keepSummary.run(this.target(), sourceId, stamp, flightsJson);
  }
}
