/**
 * The files that need the crew, right where the window says so: each with
 * its reason and its Retry, and the one "Retry all". Main's failed list is
 * fetched here, so it is shown however long the file list below is.
 */
import { visible } from '../../main/shared/visible.js';
import type { QueueItemView } from '../../main/shared/ipc.js';
import { call } from './bridge.js';
import { usePushed } from './use-pushed.js';
import { failedTitle } from './words.js';

const SHOWN = 50;

export function NeedYou(props: {
  failedCount: number;
  busy: string | null;
  onRetry: (request: { id: number } | { all: true }, what: string) => Promise<void>;
}) {
  const list = usePushed(
    'push:queue-changed',
    1000,
    () => call('queue:list', { filter: 'failed', limit: SHOWN }),
    [props.failedCount],
  );
  const items: QueueItemView[] = list.value ?? [];
  const count = Math.max(props.failedCount, items.length);
  if (count === 0) return null;
  const retry = async (request: { id: number } | { all: true }, what: string) => {
    await props.onRetry(request, what);
    await list.reload();
  };
  return (
    <section class="panel need-you tone-error" aria-labelledby="need-you-h" data-testid="need-you">
      <div class="panel-head">
        <h2 id="need-you-h">{failedTitle(count)}</h2>
        <button
          type="button"
          class="btn btn-primary"
          disabled={props.busy !== null}
          onClick={() => void retry({ all: true }, 'the failed files')}
        >
          Retry all
        </button>
      </div>
      <p class="need-you-detail">
        {count === 1 ? 'It' : 'They'} could not be uploaded. Read the reason beside each, fix it, then choose
        Retry.
      </p>
      {list.error ? (
        <div class="note tone-error" role="alert">
          <span>Could not load the files that need you: {visible(list.error)}</span>
          <button type="button" class="btn" onClick={() => void list.reload()}>
            Try again
          </button>
        </div>
      ) : null}
      <ul class="need-you-list">
        {items.map((item) => (
          <li key={item.id} data-file={item.name}>
            <div class="need-you-file">
              <span class="file-name">{visible(item.name)}</span>
              <span class="file-path">
                {visible(item.source)} · {visible(item.relPath)}
              </span>
              <span class="problem" data-testid="need-you-reason">
                {item.error ? visible(item.error.plain) : 'No reason was recorded.'}
              </span>
            </div>
            <button
              type="button"
              class="btn btn-small"
              aria-label={`Retry ${visible(item.name)}`}
              disabled={props.busy !== null}
              onClick={() => void retry({ id: item.id }, item.name)}
            >
              Retry
            </button>
          </li>
        ))}
      </ul>
      {count > items.length && items.length > 0 ? (
        <p class="muted small">
          Showing {items.length} of {count.toLocaleString()}: choose “Need you” in the file list below to see
          them all.
        </p>
      ) : null}
    </section>
  );
}
