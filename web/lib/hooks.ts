import { useCallback, useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { ApiError, get } from '../api.ts';

export interface Resource<T> {
  data: T | undefined;
  error: ApiError | undefined;
  loading: boolean;
  reload(): Promise<void>;
}

/** GETs `path` (null: nothing yet) and keeps the answer; `reload` asks again without clearing what is shown. */
export function useResource<T>(path: string | null): Resource<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const [loading, setLoading] = useState(path !== null);
  const current = useRef(path);
  current.current = path;

  const reload = useCallback(async () => {
    const asked = current.current;
    if (asked === null) return;
    try {
      const value = await get<T>(asked);
      if (current.current !== asked) return;
      setData(value);
      setError(undefined);
    } catch (caught) {
      if (current.current !== asked) return;
      setError(caught instanceof ApiError ? caught : new ApiError(0, String(caught)));
    } finally {
      if (current.current === asked) setLoading(false);
    }
  }, []);

  useEffect(() => {
    setData(undefined);
    setError(undefined);
    setLoading(path !== null);
    void reload();
  }, [path, reload]);

  return { data, error, loading, reload };
}

/**
 * A form's submission: `busy` while it runs; a 422's issues by field (`errors`, which a form's own checks may
 * also set), any other failure as `failure`.
 */
export function useSubmission() {
  const [busy, setBusy] = useState(false);
  const [errors, setStoredErrors] = useState<Record<string, string>>({});
  const [failure, setFailure] = useState<Error | undefined>(undefined);
  // The form the person was in when it was sent (the focus is in it: its button, or a field and Enter), and a
  // count of failures whose first error is still to be focused once shown.
  const origin = useRef<HTMLElement | null>(null);
  const [toFocus, setToFocus] = useState(0);
  const capture = () => {
    origin.current = (document.activeElement as HTMLElement | null)?.closest('form') ?? origin.current;
  };
  useEffect(() => {
    if (toFocus > 0) focusFirstError(origin.current);
  }, [toFocus]);
  /** Field errors found by the form itself: shown like the server's, the first one focused. */
  const setErrors = useCallback((found: Record<string, string>) => {
    capture();
    setStoredErrors(found);
    if (Object.keys(found).length > 0) setToFocus((count) => count + 1);
  }, []);
  /** Runs `work`; true when it succeeded. */
  const run = useCallback(async (work: () => Promise<unknown>): Promise<boolean> => {
    capture();
    setBusy(true);
    setStoredErrors({});
    setFailure(undefined);
    try {
      await work();
      return true;
    } catch (error) {
      if (error instanceof ApiError && error.issues.length > 0) setStoredErrors(error.fieldErrors());
      else setFailure(error as Error);
      setToFocus((count) => count + 1);
      return false;
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, errors, setErrors, failure, run };
}

/**
 * Moves the focus to a failed form's first invalid field (opening the "More settings" it may be in), else to its
 * error notice (in the form or just after it), scrolled into view below the sticky header.
 */
function focusFirstError(scope: HTMLElement | null): void {
  const within = scope ?? document.getElementById('main');
  if (!within) return;
  const target =
    within.querySelector<HTMLElement>('[aria-invalid="true"]') ??
    within.querySelector<HTMLElement>('.notice-error') ??
    within.parentElement?.querySelector<HTMLElement>('.notice-error') ??
    null;
  if (!target) return;
  const folded = target.closest('details');
  if (folded && !folded.open) folded.open = true;
  target.focus({ preventScroll: true });
  target.scrollIntoView({ block: 'center' });
}

/** Calls `tick` every `ms` while `active`, one call at a time, and not while the tab is hidden. */
export function usePoll(tick: () => Promise<unknown>, ms: number, active = true): void {
  const latest = useRef(tick);
  latest.current = tick;
  useEffect(() => {
    if (!active) return;
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const run = async () => {
      if (stopped) return;
      if (document.visibilityState === 'visible') await latest.current().catch(() => undefined);
      if (!stopped) timer = setTimeout(run, ms);
    };
    timer = setTimeout(run, ms);
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [ms, active]);
}

let marked = false;

/**
 * Marks the first time real content (a page, not the loading shell) is on screen, once per page load:
 * the browser tests read `knode:first-render` from the Performance API (its time counts from navigation start).
 */
export function useFirstRender(): void {
  useLayoutEffect(() => {
    if (marked) return;
    marked = true;
    performance.mark('knode:first-render');
  }, []);
}

/** Sets the document title while the page is shown. */
export function useTitle(title: string): void {
  useEffect(() => {
    document.title = title ? `${title} · knode` : 'knode';
  }, [title]);
}

/** A value that follows `value` after it has stopped changing for `ms`. */
export function useDebounced<T>(value: T, ms: number): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(timer);
  }, [value, ms]);
  return settled;
}
