import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { NAME_MAX_LENGTH, SHORT_TEXT_MAX_LENGTH } from '../../src/http/field-bounds.ts';
import { post } from '../api.ts';
import { FolderPicker } from '../components/folder-picker.tsx';
import { errorsUnder, type FormValues, initialValues, SchemaForm, toConfiguration, type WidgetProps } from '../components/schema-form.tsx';
import { ErrorNotice, Loading, Notice, PageHeader, SelectField, SubmitButton, TextField } from '../components/ui.tsx';
import { baseName } from '../lib/format.ts';
import { useFirstRender, useSubmission, useTitle } from '../lib/hooks.ts';
import { typeLabel, typeNamed, useTypes } from '../lib/types.ts';
import type { Dataset } from '../views.ts';

export function DatasetNew() {
  useTitle('Add a dataset');
  const types = useTypes();
  const kinds = types.data?.dataset;
  if (types.error) return <ErrorNotice error={types.error} />;
  if (!kinds) return <Loading what="dataset types" />;
  return <Form kinds={kinds} />;
}

function Form(props: { kinds: NonNullable<ReturnType<typeof useTypes>['data']>['dataset'] }) {
  useFirstRender();
  const { route } = useLocation();
  const [dtype, setDtype] = useState(props.kinds[0]?.type ?? 'local_file');
  const info = typeNamed(props.kinds, dtype);
  const schema = info?.configuration_schema ?? {};
  const [values, setValues] = useState<FormValues>(() => initialValues(schema));
  const [name, setName] = useState('');
  const [nameTouched, setNameTouched] = useState(false);
  const [summary, setSummary] = useState('');
  const { busy, errors, setErrors, failure, run } = useSubmission();

  const choose = (next: string) => {
    setDtype(next);
    setValues(initialValues(typeNamed(props.kinds, next)?.configuration_schema ?? {}));
  };

  const submit = async (event: Event) => {
    event.preventDefault();
    const { configuration, errors: local } = toConfiguration(schema, values);
    if (Object.keys(local).length > 0) {
      setErrors(Object.fromEntries(Object.entries(local).map(([key, message]) => [`configuration.${key}`, message])));
      return;
    }
    await run(async () => {
      const created = await post<Dataset>('/datasets/', { name, dtype, summary, configuration });
      route(`/datasets/${created.id}`);
    });
  };

  const widgets = {
    embedder: (widget: WidgetProps) => <EmbedderChooser {...widget} />,
    ingestionPath: (widget: WidgetProps) => (
      <FolderPicker
        {...widget}
        pick="folder"
        onPicked={(path) => {
          if (!nameTouched || name === '') setName(baseName(path));
        }}
      />
    ),
  };
  const configurationErrors = errorsUnder(errors, 'configuration');
  // The ports are kept for compatibility only (no port is opened); an embedder's server and key matter only for
  // an `openai:` embedder.
  const openaiEmbedder = typeof values.embedder === 'string' && values.embedder.startsWith('openai:');
  const form = {
    schema,
    values,
    onChange: setValues,
    errors: configurationErrors,
    widgets,
    hidden: ['httpPort', 'grpcPort', ...(openaiEmbedder ? [] : ['base_url', 'api_key'])],
    // A feed's interval is chosen with its URLs, not under "More settings".
    first: dtype === 'rss' ? ['interval'] : [],
  };
  const feeds = dtype === 'rss';

  return (
    <>
      <PageHeader
        title="Add a dataset"
        subtitle={
          feeds
            ? 'knode polls the feeds (https only), indexes their newest items and cites each by its title, link and date.'
            : 'knode reads the folder (and its sub-folders), indexes every document, and keeps up with changes.'
        }
      />
      <form class="card form" onSubmit={submit}>
        {props.kinds.length > 1 && (
          <SelectField
            label="Type"
            value={dtype}
            onChange={choose}
            options={props.kinds.map((kind) => ({ value: kind.type, label: typeLabel(kind.type) }))}
            hint={info?.description}
          />
        )}
        <TextField
          label="Name"
          required
          maxLength={NAME_MAX_LENGTH}
          hint={feeds ? 'What the feeds are about, e.g. Team blog.' : "The folder's name once you pick one, unless you write another."}
          value={name}
          error={errors.name}
          onInput={(value) => {
            setName(value);
            setNameTouched(true);
          }}
        />
        <SchemaForm part="main" {...form} />
        <TextField
          label="Summary"
          hint="A line about what the documents are."
          value={summary}
          maxLength={SHORT_TEXT_MAX_LENGTH}
          error={errors.summary}
          onInput={setSummary}
        />
        <SchemaForm part="more" {...form} />
        {configurationErrors._ && <Notice kind="error">{configurationErrors._}</Notice>}
        <ErrorNotice error={failure} />
        <div class="form-actions">
          <SubmitButton busy={busy} busyLabel="Adding…">
            Add the dataset
          </SubmitButton>
          <a class="button secondary" href="/datasets">
            Cancel
          </a>
        </div>
      </form>
    </>
  );
}

/** What each embedder the server knows is, in a few words (`embedder`'s examples in the dataset schema). */
const EMBEDDERS: Record<string, string> = {
  'use-lite': 'use-lite: Universal Sentence Encoder lite, on this machine',
  'use-lite-int8': 'use-lite-int8: the same, smaller and faster (8-bit)',
  'transformers:Xenova/all-MiniLM-L6-v2': 'transformers:Xenova/all-MiniLM-L6-v2: a sentence transformer, on this machine',
  'openai:text-embedding-3-small': 'openai:text-embedding-3-small: an OpenAI-compatible server (its URL and key below)',
};

/** The embedder, chosen from the list the schema gives (its examples), the server's default first. */
function EmbedderChooser(props: WidgetProps) {
  const known = (props.schema.examples ?? []).filter((example): example is string => typeof example === 'string');
  const options = known.includes(props.value) || props.value === '' ? known : [...known, props.value];
  return (
    <SelectField
      label={props.label}
      name={props.name}
      hint="How passages become vectors; the same embedder must index and search, so it is chosen once."
      error={props.error}
      value={props.value}
      onChange={props.onChange}
      options={[
        { value: '', label: "The server's default (SVC_EMBEDDER)" },
        ...options.map((option) => ({ value: option, label: EMBEDDERS[option] ?? option })),
      ]}
    />
  );
}
