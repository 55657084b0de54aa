import type { ComponentChildren, InputHTMLAttributes, TextareaHTMLAttributes } from 'preact';
import { useEffect, useId, useRef } from 'preact/hooks';
import type { ApiError } from '../api.ts';

/**
 * A labelled form control: the label names it, the hint and the error describe it (aria-describedby), and
 * an error marks it invalid. `children` receives the ids to put on the control.
 */
export function Field(props: {
  label: ComponentChildren;
  hint?: ComponentChildren;
  error?: string | undefined;
  required?: boolean;
  inline?: boolean;
  children: (ids: { id: string; describedBy: string | undefined; invalid: boolean }) => ComponentChildren;
}) {
  const id = useId();
  const hintId = props.hint ? `${id}-hint` : undefined;
  const errorId = props.error ? `${id}-error` : undefined;
  const describedBy = [hintId, errorId].filter(Boolean).join(' ') || undefined;
  const control = props.children({ id, describedBy, invalid: Boolean(props.error) });
  return (
    <div class={`field${props.inline ? ' field-inline' : ''}${props.error ? ' field-invalid' : ''}`}>
      {props.inline && control}
      <label for={id}>
        {props.label}
        {props.required && <span class="required"> (required)</span>}
      </label>
      {!props.inline && control}
      {props.hint && (
        <p class="hint" id={hintId}>
          {props.hint}
        </p>
      )}
      {props.error && (
        <p class="error-text" id={errorId}>
          {props.error}
        </p>
      )}
    </div>
  );
}

/** A labelled checkbox, the box before its label. */
export function CheckboxField(props: {
  label: ComponentChildren;
  hint?: ComponentChildren;
  error?: string | undefined;
  name?: string;
  checked: boolean;
  onChange: (checked: boolean) => void;
}) {
  return (
    <Field label={props.label} hint={props.hint} error={props.error} inline>
      {({ id, describedBy }) => (
        <input
          id={id}
          type="checkbox"
          name={props.name}
          checked={props.checked}
          aria-describedby={describedBy}
          onChange={(event) => props.onChange(event.currentTarget.checked)}
        />
      )}
    </Field>
  );
}

export function TextField(
  props: {
    label: ComponentChildren;
    value: string;
    onInput: (value: string) => void;
    hint?: ComponentChildren;
    error?: string | undefined;
    required?: boolean;
    multiline?: boolean;
    rows?: number;
  } & Omit<InputHTMLAttributes<HTMLInputElement>, 'label' | 'value' | 'onInput' | 'required'>,
) {
  const { label, value, onInput, hint, error, required, multiline, rows, ...rest } = props;
  return (
    <Field label={label} hint={hint} error={error} required={required}>
      {({ id, describedBy, invalid }) =>
        multiline ? (
          <textarea
            id={id}
            value={value}
            rows={rows ?? 3}
            required={required}
            aria-describedby={describedBy}
            aria-invalid={invalid || undefined}
            onInput={(event) => onInput(event.currentTarget.value)}
            {...(rest as TextareaHTMLAttributes<HTMLTextAreaElement>)}
          />
        ) : (
          <input
            id={id}
            value={value}
            required={required}
            aria-describedby={describedBy}
            aria-invalid={invalid || undefined}
            onInput={(event) => onInput(event.currentTarget.value)}
            {...rest}
          />
        )
      }
    </Field>
  );
}

export function SelectField(props: {
  label: ComponentChildren;
  /** The control's name, where a form finds its fields by name (focus on the first invalid one). */
  name?: string;
  value: string;
  onChange: (value: string) => void;
  options: { value: string; label: string }[];
  hint?: ComponentChildren;
  error?: string | undefined;
  required?: boolean;
}) {
  return (
    <Field label={props.label} hint={props.hint} error={props.error} required={props.required}>
      {({ id, describedBy, invalid }) => (
        <select
          id={id}
          name={props.name}
          value={props.value}
          required={props.required}
          aria-describedby={describedBy}
          aria-invalid={invalid || undefined}
          onChange={(event) => props.onChange(event.currentTarget.value)}
        >
          {props.options.map((option) => (
            <option key={option.value} value={option.value}>
              {option.label}
            </option>
          ))}
        </select>
      )}
    </Field>
  );
}

/** An error (or any message) the person must see: announced by screen readers as it appears. */
export function Notice(props: { kind?: 'error' | 'info' | 'success' | 'warning'; children: ComponentChildren; title?: string }) {
  const kind = props.kind ?? 'info';
  const box = useRef<HTMLDivElement>(null);
  // An error appears where the eye is: scrolled into view (below the sticky header), and focusable, so that a
  // form that failed can move the focus to it (`useSubmission`).
  useEffect(() => {
    if (kind === 'error') box.current?.scrollIntoView({ block: 'nearest' });
  }, [kind]);
  return (
    <div
      ref={box}
      class={`notice notice-${kind}`}
      role={kind === 'error' ? 'alert' : 'status'}
      tabIndex={kind === 'error' || kind === 'warning' ? -1 : undefined}
    >
      {props.title && <strong>{props.title} </strong>}
      {props.children}
    </div>
  );
}

/** An API failure, with the field problems listed when the form could not place them. */
/** A form's submit button: disabled, and saying what is happening, while the form is being sent. */
export function SubmitButton(props: { busy: boolean; busyLabel: string; disabled?: boolean; children: ComponentChildren }) {
  return (
    <button type="submit" disabled={props.busy || props.disabled}>
      {props.busy ? props.busyLabel : props.children}
    </button>
  );
}

export function ErrorNotice(props: { error: ApiError | Error | undefined | null; title?: string }) {
  if (!props.error) return null;
  return (
    <Notice kind="error" title={props.title}>
      {props.error.message}
    </Notice>
  );
}

export function PageHeader(props: { title: ComponentChildren; subtitle?: ComponentChildren; actions?: ComponentChildren }) {
  return (
    <header class="page-header">
      <div>
        <h1>{props.title}</h1>
        {props.subtitle && <p class="subtitle">{props.subtitle}</p>}
      </div>
      {props.actions && <div class="actions">{props.actions}</div>}
    </header>
  );
}

export function Badge(props: { tone?: 'neutral' | 'good' | 'busy' | 'bad' | 'muted'; children: ComponentChildren }) {
  return <span class={`badge badge-${props.tone ?? 'neutral'}`}>{props.children}</span>;
}

/**
 * A progress bar with its text alternative; `searchable` (done but for the vectors) and `failed` show as
 * further segments after the done part.
 */
export function ProgressBar(props: { value: number; max: number; label: string; searchable?: number; failed?: number }) {
  const share = (part: number) => (props.max > 0 ? Math.min(1, part / props.max) : 0);
  return (
    <div
      class="progress"
      role="progressbar"
      aria-label={props.label}
      aria-valuemin={0}
      aria-valuemax={props.max}
      aria-valuenow={props.value}
    >
      <div class="progress-fill" style={{ width: `${(share(props.value) * 100).toFixed(1)}%` }} />
      {props.searchable ? <div class="progress-searchable" style={{ width: `${(share(props.searchable) * 100).toFixed(1)}%` }} /> : null}
      {props.failed ? <div class="progress-failed" style={{ width: `${(share(props.failed) * 100).toFixed(1)}%` }} /> : null}
    </div>
  );
}

export function Loading(props: { what?: string }) {
  return (
    <p class="loading" role="status">
      Loading{props.what ? ` ${props.what}` : ''}…
    </p>
  );
}

export function Empty(props: { children: ComponentChildren }) {
  return <div class="empty">{props.children}</div>;
}
