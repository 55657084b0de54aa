import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { type Dataset, post } from '../api.ts';
import { FolderPicker } from '../components/folder-picker.tsx';
import { errorsUnder, type FormValues, initialValues, SchemaForm, toConfiguration, type WidgetProps } from '../components/schema-form.tsx';
import { ErrorNotice, Loading, Notice, PageHeader, SelectField, SubmitButton, TextField } from '../components/ui.tsx';
import { baseName } from '../lib/format.ts';
import { useFirstRender, useSubmission, useTitle } from '../lib/hooks.ts';
import { typeLabel, typeNamed, useTypes } from '../lib/types.ts';

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

  return (
    <>
      <PageHeader
        title="Add a dataset"
        subtitle="knode reads the folder (and its sub-folders), indexes every document, and keeps up with changes."
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
        <SchemaForm schema={schema} values={values} onChange={setValues} errors={configurationErrors} widgets={widgets} />
        <TextField
          label="Name"
          required
          maxLength={200}
          value={name}
          error={errors.name}
          onInput={(value) => {
            setName(value);
            setNameTouched(true);
          }}
        />
        <TextField
          label="Summary"
          hint="A line about what the documents are."
          value={summary}
          maxLength={2000}
          error={errors.summary}
          onInput={setSummary}
        />
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
