import { useState } from 'preact/hooks';
import { bytes, count, plural } from '../lib/format.ts';
import { FolderBar, useFolderBrowsing } from './folder-listing.tsx';
import { FileIcon, FolderIcon } from './icons.tsx';

/**
 * Chooses several files and folders inside the tenant's ingestion roots (a dataset's selection), through
 * `GET /api/v1/folders`: each folder and document has a checkbox, folders open with their name's button, and
 * the ticks are kept while the user moves between folders; "Add selected" hands them over at once. Every
 * control is a native checkbox or button, so it works with the keyboard alone.
 */
export function SelectionBrowser(props: { busy: boolean; onAdd: (paths: string[]) => Promise<boolean>; onClose: () => void }) {
  const browsing = useFolderBrowsing();
  const { listing, go } = browsing;
  const [ticked, setTicked] = useState<string[]>([]);

  const toggle = (entry: string, on: boolean) =>
    setTicked((now) => (on ? [...now.filter((p) => p !== entry), entry] : now.filter((p) => p !== entry)));
  const tick = (entry: string, name: string, what: string) => (
    <input
      type="checkbox"
      checked={ticked.includes(entry)}
      aria-label={`Select the ${what} ${name}`}
      onChange={(event) => toggle(entry, event.currentTarget.checked)}
    />
  );
  const documents = listing?.files.filter((file) => file.kind === 'document') ?? [];

  return (
    <section class="browser" aria-label="Files and folders inside your ingestion roots">
      <FolderBar browsing={browsing} />
      {listing && (
        <ul class="browser-list">
          {listing.path === null && listing.folders.length === 0 && (
            <li class="hint">
              You have no ingestion roots: the operator grants folders (SVC_INGESTION_ROOTS, or PATCH /api/v1/tenants/&lt;name&gt;).
            </li>
          )}
          {listing.folders.map((folder) => (
            <li key={folder.path} class={ticked.includes(folder.path) ? 'selected' : undefined}>
              {tick(folder.path, folder.name, 'folder')}
              <button type="button" class="browser-open" onClick={() => go(folder.path)} aria-label={`Open folder ${folder.name}`}>
                <FolderIcon /> {folder.name}
              </button>
              <span class="browser-count">
                {count(folder.documents)}
                {folder.complete ? '' : '+'} documents
              </span>
            </li>
          ))}
          {documents.map((file) => (
            <li key={file.path} class={ticked.includes(file.path) ? 'selected' : undefined}>
              {tick(file.path, file.name, 'file')}
              <span class="browser-file">
                <FileIcon /> {file.name}
              </span>
              <span class="browser-count">{bytes(file.size)}</span>
            </li>
          ))}
          {listing.path !== null && listing.folders.length === 0 && documents.length === 0 && (
            <li class="hint">No sub-folders or documents here.</li>
          )}
        </ul>
      )}
      <div class="browser-foot">
        <span aria-live="polite">{plural(ticked.length, 'entry', 'entries')} selected</span>
        <span class="actions">
          <button type="button" class="secondary" onClick={props.onClose}>
            Close
          </button>
          <button
            type="button"
            disabled={ticked.length === 0 || props.busy}
            onClick={async () => {
              if (await props.onAdd(ticked)) setTicked([]);
            }}
          >
            Add selected
          </button>
        </span>
      </div>
    </section>
  );
}
