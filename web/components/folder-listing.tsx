import type { RefObject } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, get } from '../api.ts';
import type { FolderListing } from '../views.ts';

/**
 * Moving through the tenant's ingestion roots with `GET /api/v1/folders`, shared by the folder picker (one
 * folder or model) and the selection browser (several files and folders): the folder shown, its listing or the
 * error that came instead, and the bar above the list (where one is, "Up"). The entries themselves differ, so
 * each browser lists them.
 */
export interface FolderBrowsing {
  /** The folder shown (null: the roots), once its listing came; undefined while it loads. */
  listing: FolderListing | undefined;
  error: string | undefined;
  /** Opens a folder (null: the roots); the focus goes to its name once it is shown. */
  go(path: string | null): void;
  title: RefObject<HTMLSpanElement>;
}

export function useFolderBrowsing(): FolderBrowsing {
  const [path, setPath] = useState<string | null>(null);
  const [listing, setListing] = useState<FolderListing | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  // "Open" and "Up" replace the list, the pressed button with it: the focus goes to the folder's name, shown next.
  const moved = useRef(false);
  const title = useRef<HTMLSpanElement>(null);
  const go = (next: string | null) => {
    moved.current = true;
    setPath(next);
  };
  useEffect(() => {
    if (!moved.current || !listing || listing.path !== path) return;
    moved.current = false;
    title.current?.focus();
  }, [listing, path]);

  useEffect(() => {
    let current = true;
    setError(undefined);
    get<FolderListing>(path === null ? '/folders' : `/folders?path=${encodeURIComponent(path)}`)
      .then((found) => current && setListing(found))
      .catch((caught) => current && setError(caught instanceof ApiError ? caught.message : String(caught)));
    return () => {
      current = false;
    };
  }, [path]);

  return { listing, error, go, title };
}

/** Where the browser is (announced as it changes), "Up" when inside a root, and the error or "Loading…" instead of the list. */
export function FolderBar({ browsing }: { browsing: FolderBrowsing }) {
  const { listing, error, go, title } = browsing;
  return (
    <>
      <div class="browser-bar">
        <span class="browser-path" tabIndex={-1} ref={title} aria-live="polite">
          {listing?.path ?? 'Your ingestion roots'}
        </span>
        {listing?.path && (
          <button type="button" class="link" onClick={() => go(listing.parent)}>
            ↑ Up{listing.parent ? '' : ' to the roots'}
          </button>
        )}
      </div>
      {error && <p class="error-text">{error}</p>}
      {!listing && !error && <p class="hint">Loading…</p>}
    </>
  );
}
