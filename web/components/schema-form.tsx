import { type ComponentChildren, Fragment, type JSX } from 'preact';
import { isSecretKey } from '../../src/security/secret-words.ts';
import type { Configuration, JsonSchema } from '../views.ts';
import { CheckboxField, Field } from './ui.tsx';

/**
 * A form built from a type's JSON Schema (`GET /api/v1/types`): every property becomes a labelled control
 * chosen from its schema (enum: a list; boolean: a box; number: a number; array of strings: one per line;
 * anything else: text), required ones first and the optional ones under "More settings", with the
 * schema's description and default as the hint. A new type on the server therefore needs no form code
 * here. A few properties known by name get a richer control (`widgets`: the folder browser for
 * `ingestionPath`, say), whatever type they belong to. The server checks everything; its 422 issues come
 * back to the fields they name.
 */

/** What the controls hold: text for text and numbers, lines for lists, booleans for boxes. */
export type FormValues = Record<string, string | boolean>;

export interface WidgetProps {
  name: string;
  label: string;
  schema: JsonSchema;
  value: string;
  onChange: (value: string) => void;
  /** Every value of the form: a widget may depend on another field (the model list on `base_url`). */
  values: FormValues;
  setValue: (name: string, value: string | boolean) => void;
  error: string | undefined;
  required: boolean;
  hint: ComponentChildren;
}

export type Widgets = Record<string, (props: WidgetProps) => JSX.Element>;

const ACRONYMS: Record<string, string> = {
  url: 'URL',
  api: 'API',
  id: 'ID',
  gpu: 'GPU',
  ms: '(ms)',
  http: 'HTTP',
  grpc: 'gRPC',
  mpp: 'MPP',
  usd: 'USD',
};

function words(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .split(/[\s_-]+/)
    .filter(Boolean)
    .map((word) => word.toLowerCase());
}

export function labelOf(name: string): string {
  const text = words(name)
    .map((word) => ACRONYMS[word] ?? word)
    .join(' ');
  return text.charAt(0).toUpperCase() + text.slice(1);
}

type Kind = 'boolean' | 'number' | 'integer' | 'enum' | 'lines' | 'json' | 'text';

function typesOf(schema: JsonSchema): string[] {
  return Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
}

function kindOf(schema: JsonSchema): Kind {
  if (schema.enum || schema.const !== undefined) return 'enum';
  const types = typesOf(schema);
  if (types.includes('boolean')) return 'boolean';
  if (types.includes('integer')) return 'integer';
  if (types.includes('number')) return 'number';
  if (types.includes('array')) return typesOf(schema.items ?? {}).includes('string') ? 'lines' : 'json';
  if (types.includes('object')) return 'json';
  // A union such as "a string, or a list of them" reads best as text.
  if (schema.anyOf?.some((option) => typesOf(option).includes('string'))) return 'text';
  return 'text';
}

function display(value: unknown, kind: Kind): string | boolean {
  if (kind === 'boolean') return value === true;
  if (value === undefined || value === null) return '';
  if (kind === 'lines' && Array.isArray(value)) return value.map(String).join('\n');
  if (kind === 'json' || (typeof value === 'object' && value !== null)) return JSON.stringify(value, null, 2);
  return String(value);
}

/** The controls' values for a configuration (or the schema's defaults for a new one). */
export function initialValues(schema: JsonSchema, configuration?: Configuration): FormValues {
  const values: FormValues = {};
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    const kind = kindOf(property);
    const given = configuration?.[name];
    if (given !== undefined) values[name] = display(given, kind);
    else if (kind === 'boolean') values[name] = property.default === true;
    else if (kind === 'enum' && (schema.required ?? []).includes(name)) values[name] = String(property.enum?.[0] ?? property.const ?? '');
    else values[name] = '';
  }
  return values;
}

/**
 * The configuration the values say: empty optional fields are left out (the server fills in their
 * defaults); keys of `base` that the schema does not know are kept. Text that cannot be a number or JSON
 * is reported against its field without asking the server.
 */
export function toConfiguration(
  schema: JsonSchema,
  values: FormValues,
  base: Configuration = {},
): { configuration: Configuration; errors: Record<string, string> } {
  const configuration: Configuration = { ...base };
  const errors: Record<string, string> = {};
  const required = new Set(schema.required ?? []);
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    delete configuration[name];
    const parsed = fieldValue(property, values[name], required.has(name));
    if (parsed === undefined) continue;
    if ('error' in parsed) errors[name] = parsed.error;
    else configuration[name] = parsed.value;
  }
  return { configuration, errors };
}

/** A field's configuration value, or what is wrong with it; undefined for an empty optional field (left out). */
function fieldValue(
  property: JsonSchema,
  value: string | boolean | undefined,
  isRequired: boolean,
): { value: unknown } | { error: string } | undefined {
  const kind = kindOf(property);
  if (kind === 'boolean') return { value: value === true };
  const text = typeof value === 'string' ? value.trim() : '';
  if (text === '') return kind === 'lines' && isRequired ? { value: [] } : undefined;
  return parseText(kind, property, value, text);
}

/** A field's non-empty text as its configuration value, or what is wrong with it. */
function parseText(kind: Kind, property: JsonSchema, value: unknown, text: string): { value: unknown } | { error: string } {
  if (kind === 'number' || kind === 'integer') {
    const number = Number(text);
    return Number.isFinite(number) ? { value: number } : { error: 'Enter a number' };
  }
  if (kind === 'lines') {
    return {
      value: text
        .split('\n')
        .map((line) => line.trim())
        .filter(Boolean),
    };
  }
  if (kind === 'json') {
    try {
      return { value: JSON.parse(text) };
    } catch {
      return { error: 'Enter valid JSON' };
    }
  }
  if (kind === 'enum' && typeof property.enum?.[0] !== 'string' && property.enum !== undefined) return { value: JSON.parse(text) };
  // Free text keeps its spaces (a system prompt); a one-line value is trimmed.
  return { value: typeof value === 'string' && value.includes('\n') ? value : text };
}

function hintOf(property: JsonSchema, kind: Kind): ComponentChildren {
  const parts: string[] = [];
  if (property.description) parts.push(property.description.replace(/\.$/, ''));
  if (property.default !== undefined && property.default !== '' && kind !== 'boolean') parts.push(`default ${String(property.default)}`);
  if (kind === 'lines') parts.push('one per line');
  return parts.length > 0 ? withCode(`${parts.join('; ')}.`) : undefined;
}

/** A description's Markdown code spans (`openai:`) as code, not as raw backticks. */
function withCode(text: string): ComponentChildren {
  if (!text.includes('`')) return text;
  return text.split('`').map((part, index) => (index % 2 === 1 ? <code key={index}>{part}</code> : part));
}

function placeholderOf(property: JsonSchema): string | undefined {
  const example = property.examples?.[0];
  if (typeof example === 'string' || typeof example === 'number') return String(example);
  if (Array.isArray(example)) return example.map(String).join('\n');
  if (property.default !== undefined && typeof property.default !== 'object') return String(property.default);
  return undefined;
}

function Control(props: {
  name: string;
  property: JsonSchema;
  value: string | boolean;
  onChange: (value: string | boolean) => void;
  required: boolean;
  error?: string | undefined;
  hint: ComponentChildren;
}) {
  const { name, property, required } = props;
  const kind = kindOf(property);
  const label = labelOf(name);
  if (kind === 'boolean') {
    return (
      <CheckboxField
        label={label}
        hint={props.hint}
        error={props.error}
        name={name}
        checked={props.value === true}
        onChange={props.onChange}
      />
    );
  }
  const text = typeof props.value === 'string' ? props.value : '';
  return (
    <Field label={label} hint={props.hint} error={props.error} required={required}>
      {({ id, describedBy, invalid }) => {
        const common = {
          id,
          name,
          'aria-describedby': describedBy,
          'aria-invalid': invalid || undefined,
          required,
        };
        const onText = (value: string) => props.onChange(value);
        if (kind === 'enum') return enumSelect(common, property, text, required, onText);
        if (kind === 'number' || kind === 'integer') return numberInput(common, property, kind, text, onText);
        return textInput(common, name, property, kind, text, onText);
      }}
    </Field>
  );
}

/** The attributes every control of a field has: its id, name, descriptions, validity and whether it is required. */
interface CommonAttributes {
  id: string;
  name: string;
  'aria-describedby': string | undefined;
  'aria-invalid': true | undefined;
  required: boolean;
}

function enumSelect(common: CommonAttributes, property: JsonSchema, text: string, required: boolean, onText: (value: string) => void) {
  const options = property.enum ?? [property.const];
  return (
    <select {...common} value={text} onChange={(event) => onText(event.currentTarget.value)}>
      {!required && <option value="">{property.default !== undefined ? `Default (${String(property.default)})` : 'Not set'}</option>}
      {options.map((option) => (
        <option key={String(option)} value={typeof option === 'string' ? option : JSON.stringify(option)}>
          {String(option)}
        </option>
      ))}
    </select>
  );
}

function numberInput(common: CommonAttributes, property: JsonSchema, kind: Kind, text: string, onText: (value: string) => void) {
  return (
    <input
      {...common}
      type="number"
      inputMode={kind === 'integer' ? 'numeric' : 'decimal'}
      step={kind === 'integer' ? 1 : 'any'}
      min={property.minimum}
      max={property.maximum}
      placeholder={placeholderOf(property)}
      value={text}
      onInput={(event) => onText(event.currentTarget.value)}
    />
  );
}

/** Long text (lines, JSON, prompts and descriptions) in a text area; else one line, a password for a secret. */
function textInput(
  common: CommonAttributes,
  name: string,
  property: JsonSchema,
  kind: Kind,
  text: string,
  onText: (value: string) => void,
) {
  const long =
    kind === 'lines' || kind === 'json' || /prompt|description|readme|instructions/i.test(name) || (property.maxLength ?? 0) > 5000;
  if (long) {
    return (
      <textarea
        {...common}
        rows={kind === 'json' ? 5 : 3}
        placeholder={placeholderOf(property)}
        value={text}
        onInput={(event) => onText(event.currentTarget.value)}
      />
    );
  }
  // A password field for exactly the keys the server masks and seals (one list: src/security/secret-words.ts).
  const secret = isSecretKey(name);
  return (
    <input
      {...common}
      type={secret ? 'password' : property.format === 'uri' || /url$/i.test(name) ? 'url' : 'text'}
      autoComplete={secret ? 'off' : undefined}
      spellcheck={false}
      maxLength={property.maxLength}
      placeholder={placeholderOf(property)}
      value={text}
      onInput={(event) => onText(event.currentTarget.value)}
    />
  );
}

export function SchemaForm(props: {
  schema: JsonSchema;
  values: FormValues;
  onChange: (values: FormValues) => void;
  /** Field errors keyed by property name. */
  errors?: Record<string, string>;
  widgets?: Widgets;
  /** Properties shown elsewhere (or not at all). */
  hidden?: readonly string[];
  /** Optional properties shown first, with the required ones, in this order (a server's URL before its model). */
  first?: readonly string[];
  /** Only the main fields, or only "More settings" (a page puts its own fields between them); both by default. */
  part?: 'main' | 'more';
}) {
  const { schema, values } = props;
  const required = new Set(schema.required ?? []);
  const entries = Object.entries(schema.properties ?? {}).filter(([name]) => !props.hidden?.includes(name));
  const setValue = (name: string, value: string | boolean) => props.onChange({ ...values, [name]: value });

  const render = ([name, property]: [string, JsonSchema]) => {
    const kind = kindOf(property);
    const hint = hintOf(property, kind);
    const error = props.errors?.[name];
    // Called, not mounted: a widget made inline by the page is a new function at every render, and as a
    // component it would be mounted again each time (losing its state and the focus of its input).
    const widget = props.widgets?.[name];
    if (widget) {
      const value = values[name];
      return (
        <Fragment key={name}>
          {widget({
            name,
            label: labelOf(name),
            schema: property,
            value: typeof value === 'string' ? value : '',
            onChange: (next) => setValue(name, next),
            values,
            setValue,
            error,
            required: required.has(name),
            hint,
          })}
        </Fragment>
      );
    }
    return (
      <Control
        key={name}
        name={name}
        property={property}
        value={values[name] ?? ''}
        onChange={(next) => setValue(name, next)}
        required={required.has(name)}
        error={error}
        hint={hint}
      />
    );
  };

  const first = props.first ?? [];
  const promoted = (name: string) => first.includes(name);
  const main = [
    ...first.flatMap((name) => entries.filter(([entry]) => entry === name)),
    ...entries.filter(([name]) => required.has(name) && !promoted(name)),
  ];
  const more = entries.filter(([name]) => !required.has(name) && !promoted(name));
  const moreHasError = more.some(([name]) => props.errors?.[name]);
  return (
    <div class="schema-form">
      {props.part !== 'more' && main.map(render)}
      {props.part !== 'main' && more.length > 0 && (
        <details class="more" open={moreHasError || undefined}>
          <summary>More settings ({more.length})</summary>
          <div class="more-body">{more.map(render)}</div>
        </details>
      )}
    </div>
  );
}

/** Field errors of a 422 that fall under `prefix` (e.g. `configuration`), keyed by the property. */
export function errorsUnder(errors: Record<string, string>, prefix: string): Record<string, string> {
  const found: Record<string, string> = {};
  for (const [key, message] of Object.entries(errors)) {
    if (key === prefix) found._ = message;
    else if (key.startsWith(`${prefix}.`)) {
      const name = key.slice(prefix.length + 1).split('.')[0] as string;
      found[name] ??= message;
    }
  }
  return found;
}
