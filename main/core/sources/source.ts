import path from 'node:path';

/**
 * A place media comes from: a card, known by its identity wherever it is
 * mounted, or a watched folder, known by its path. The queue stores the
 * `sourceId` string; `sourceOf` reads it back, in this one place.
 */
export type Source =
  | { kind: 'card'; sourceId: string; cardId: string; root: string; label: string }
  | { kind: 'folder'; sourceId: string; root: string; label: string };

const CARD = 'card:';
const FOLDER = 'folder:';

export function cardSource(card: { id: string; root: string; label: string }): Source {
  return { kind: 'card', sourceId: `${CARD}${card.id}`, cardId: card.id, root: card.root, label: card.label };
}

/** A folder is called by its name (a card copied to disk keeps the card's name), its id is its path. */
export function folderSource(root: string): Source {
  return { kind: 'folder', sourceId: `${FOLDER}${root}`, root, label: path.basename(root) || root };
}

/** What a stored source id names: a card by its id, or a folder by its path. */
export function sourceOf(
  sourceId: string,
): { kind: 'card'; cardId: string } | { kind: 'folder'; root: string } {
  if (sourceId.startsWith(CARD)) return { kind: 'card', cardId: sourceId.slice(CARD.length) };
  return { kind: 'folder', root: sourceId.startsWith(FOLDER) ? sourceId.slice(FOLDER.length) : sourceId };
}
