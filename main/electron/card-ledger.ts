/**
 * Each card's two verdicts as the window, the tray and the notifications
 * show them, kept from the agent's events: the local verdict when its
 * copies come to rest ('local'), both verdicts when the card comes to rest
 * ('offload'), the bytes in the workspace moved on by every file that gets
 * there in between (so the workspace bar and the headline never go stale
 * while the upload continues from the copies), and the destinations that
 * stopped for a card until its next scan. Plain data in, plain views out.
 */
import type { CardOffload } from '../core/offload/card.js';
import type { CardView, LocalVerdictView, VerdictView, WorkspaceVerdictView } from '../shared/ipc.js';
import { formatBytes } from './notifications.js';

interface Entry {
  label: string;
  local: LocalVerdictView | null;
  /** The workspace verdict of the last offload (the card at rest), else null. */
  final: VerdictView | null;
  bytesTotal: number;
  bytesThere: number;
  /** The verdict's advisory line (flights to look at before leaving), else null. */
  advisory: string | null;
}

export type CardVerdicts = Pick<
  CardView,
  'headline' | 'local' | 'workspace' | 'stopped' | 'created' | 'advisory'
>;

const NONE: CardVerdicts = { headline: null, local: null, workspace: null, stopped: [], created: [] };

function localView(o: CardOffload): LocalVerdictView | null {
  const l = o.local;
  if (!l) return null;
  return {
    safe: l.safe,
    message: l.message,
    reasons: [...l.reasons],
    files: l.counts.files,
    verified: l.counts.everywhere,
    destinations: l.counts.perDestination.map((d) => ({ label: d.label, verified: d.verified })),
  };
}

function bytes(o: CardOffload): { total: number; there: number } {
  let total = 0;
  let there = 0;
  for (const f of o.files) {
    total += f.size;
    if (f.state === 'done') there += f.size;
  }
  return { total, there };
}

export class CardLedger {
  private readonly cards = new Map<string, Entry>();
  /** Destinations stopped per card (label -> reason), until the card's next scan. */
  private readonly stops = new Map<string, Map<string, string>>();
  /** Destination folders made per card (label -> what was said). */
  private readonly made = new Map<string, Map<string, string>>();

  /** A card's copies came to rest: its local verdict; the upload goes on from the copies. */
  local(sourceId: string, o: CardOffload): void {
    const b = bytes(o);
    this.cards.set(sourceId, {
      label: o.card.label,
      local: localView(o),
      final: null,
      bytesTotal: b.total,
      bytesThere: b.there,
      advisory: o.verdict.advisory ?? null,
    });
  }

  /** A card came to rest: both verdicts as they stand now. */
  offload(sourceId: string, o: CardOffload): void {
    const b = bytes(o);
    const v = o.verdict;
    this.cards.set(sourceId, {
      label: o.card.label,
      local: localView(o),
      final: { safe: v.safe, message: v.message, reasons: [...v.reasons] },
      bytesTotal: b.total,
      bytesThere: b.there,
      advisory: v.advisory ?? null,
    });
  }

  /** A file of a card reached the workspace (acknowledged): the bar moves on at once. */
  fileThere(sourceId: string, size: number): void {
    const e = this.cards.get(sourceId);
    if (e) e.bytesThere = Math.min(e.bytesTotal, e.bytesThere + size);
  }

  stopped(sourceId: string, destination: string, message: string): void {
    const m = this.stops.get(sourceId) ?? new Map<string, string>();
    m.set(destination, message);
    this.stops.set(sourceId, m);
  }

  /** A destination's folder was made for a card (not there yet, or gone): said once, a scan does not clear it. */
  created(sourceId: string, destination: string, message: string): void {
    const m = this.made.get(sourceId) ?? new Map<string, string>();
    m.set(destination, message);
    this.made.set(sourceId, m);
  }

  /** A new scan of the card tries every destination again (the engine forgets its stops then). */
  scanned(sourceId: string): void {
    this.stops.delete(sourceId);
  }

  /** The verdict's advisory line of a card (for the notifications), else null. */
  advisoryOf(sourceId: string): string | null {
    return this.cards.get(sourceId)?.advisory ?? null;
  }

  /** The local verdict of a card, if it was made (for the tray). */
  localOf(sourceId: string): LocalVerdictView | null {
    return this.cards.get(sourceId)?.local ?? null;
  }

  view(sourceId: string): CardVerdicts {
    const stopped = [...(this.stops.get(sourceId) ?? [])].map(([destination, message]) => ({
      destination,
      message,
    }));
    const created = [...(this.made.get(sourceId) ?? [])].map(([destination, message]) => ({
      destination,
      message,
    }));
    const e = this.cards.get(sourceId);
    if (!e) return { ...NONE, stopped, created };
    // The sizes as the progress beside them says them (1 KB = 1024 bytes), so the two never disagree.
    const amount = `${formatBytes(e.bytesThere)} of ${formatBytes(e.bytesTotal)}`;
    const workspace: WorkspaceVerdictView = e.final
      ? { ...e.final, bytesTotal: e.bytesTotal, bytesThere: e.bytesThere, amount, final: true }
      : {
          safe: false,
          message: `${e.label}: ${amount} in the workspace — the upload goes on`,
          reasons: [],
          bytesTotal: e.bytesTotal,
          bytesThere: e.bytesThere,
          amount,
          final: false,
        };
    return {
      headline: headline(e, workspace),
      local: e.local,
      workspace,
      stopped,
      created,
      advisory: e.advisory,
    };
  }
}

/**
 * The one line: in the workspace says it all; locally safe says where the
 * copies are and how far the upload is (live); else what the workspace
 * verdict says, or (before the card is at rest) what the copies say.
 */
function headline(e: Entry, w: WorkspaceVerdictView): { safe: boolean; message: string } | null {
  if (w.final && w.safe) return { safe: true, message: w.message };
  if (e.local?.safe) {
    const upload = w.final
      ? `${w.amount} in the workspace`
      : `the upload continues from the copies (${w.amount} sent)`;
    return { safe: true, message: `${e.local.message}; ${upload}` };
  }
  if (w.final) return { safe: false, message: w.message };
  return e.local ? { safe: false, message: e.local.message } : null;
}
