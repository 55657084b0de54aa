import { useState } from 'preact/hooks';
import { bytes, count, plural } from '../lib/format.ts';
import { FolderBar, useFolderBrowsing } from './folder-listing.tsx';
import { FileIcon, FolderIcon } from './icons.tsx';
import type { WidgetProps } from './schema-form.tsx';
import { Field } from './ui.tsx';

/**
 * Picks a folder (a dataset's `ingestionPath`) or a `.gguf` file (a model's `model_path`) inside the
 * tenant's ingestion roots, through `GET /api/v1/folders`: the roots first, then their sub-folders with
 * how many documents and models each holds. The path can also be typed. Every entry is a button, so the
 * browser works with the keyboard alone.
 */
export function FolderPicker(props: WidgetProps & { pick: 'folder' | 'model'; onPicked?: (path: string) => void }) {
  const [open, setOpen] = useState(props.value === '');
  return (
    <Field label={props.label} hint={props.hint} error={props.error} required={props.required}>
      {({ id, describedBy, invalid }) => (
        <div class="picker">
          <div class="picker-row">
            <input
              id={id}
              name={props.name}
              type="text"
              spellcheck={false}
              required={props.required}
              aria-describedby={describedBy}
              aria-invalid={invalid || undefined}
              placeholder={props.pick === 'folder' ? '/home/you/Documents' : '/home/you/models/model.gguf'}
              value={props.value}
              onInput={(event) => props.onChange(event.currentTarget.value)}
            />
            <button type="button" class="secondary" aria-expanded={open} onClick={() => setOpen(!open)}>
              {open ? 'Close browser' : 'Browse…'}
            </button>
          </div>
          {open && (
            <Browser
              pick={props.pick}
              start={props.value}
              selected={props.value}
              onPick={(path) => {
                props.onChange(path);
                props.onPicked?.(path);
                if (props.pick === 'model') setOpen(false);
              }}
            />
          )}
        </div>
      )}
    </Field>
  );
}

function Browser(props: { pick: 'folder' | 'model'; start: string; selected: string; onPick: (path: string) => void }) {
  const browsing = useFolderBrowsing();
  const { listing, go } = browsing;

  const what = props.pick === 'folder' ? 'documents' : 'models';
  return (
    <section class="browser" aria-label="Folders inside your ingestion roots">
      <FolderBar browsing={browsing} />
      {listing && (
        <ul class="browser-list">
          {listing.path === null && listing.folders.length === 0 && (
            <li class="hint">
              You have no ingestion roots: knode may read no folder for you yet. The operator grants folders (SVC_INGESTION_ROOTS, or PATCH
              /api/v1/tenants/&lt;name&gt;).
            </li>
          )}
          {listing.folders.map((folder) => {
            const found = props.pick === 'folder' ? folder.documents : folder.models;
            return (
              <li key={folder.path} class={props.selected === folder.path ? 'selected' : undefined}>
                <button type="button" class="browser-open" onClick={() => go(folder.path)} aria-label={`Open ${folder.name}`}>
                  <FolderIcon /> {folder.name}
                </button>
                <span class="browser-count">
                  {count(found)}
                  {folder.complete ? '' : '+'} {what}
                </span>
                {props.pick === 'folder' && (
                  <button type="button" class="small" onClick={() => props.onPick(folder.path)} aria-label={`Use ${folder.name}`}>
                    Use this folder
                  </button>
                )}
              </li>
            );
          })}
          {props.pick === 'model' &&
            listing.files
              .filter((file) => file.kind === 'model')
              .map((file) => (
                <li key={file.path} class={props.selected === file.path ? 'selected' : undefined}>
                  <span class="browser-file">
                    <FileIcon /> {file.name}
                  </span>
                  <span class="browser-count">{bytes(file.size)}</span>
                  <button type="button" class="small" onClick={() => props.onPick(file.path)} aria-label={`Use ${file.name}`}>
                    Use this model
                  </button>
                </li>
              ))}
          {listing.path !== null &&
            listing.folders.length === 0 &&
            (props.pick === 'folder' || !listing.files.some((f) => f.kind === 'model')) && (
              <li class="hint">No sub-folders{props.pick === 'model' ? ' or .gguf files' : ''} here.</li>
            )}
        </ul>
      )}
      {props.pick === 'folder' && listing?.path && (
        <div class="browser-foot">
          <span>{plural(listing.files.filter((file) => file.kind === 'document').length, 'document')} directly in this folder</span>
          <button type="button" onClick={() => listing.path && props.onPick(listing.path)}>
            Use {listing.path.split('/').at(-1) || listing.path}
          </button>
        </div>
      )}
    </section>
  );
}
