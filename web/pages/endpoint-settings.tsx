import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { apiPath, del, type Endpoint, type GenerationDefaults, patch } from '../api.ts';
import { errorsUnder } from '../components/schema-form.tsx';
import { CheckboxField, ErrorNotice, Notice, SubmitButton, TextField } from '../components/ui.tsx';
import { useFirstRender, useSubmission } from '../lib/hooks.ts';

/** Name, summary and description, and what a query that omits them gets (`generation_defaults`). */
export function EndpointSettings(props: { endpoint: Endpoint; reload: () => Promise<void> }) {
  useFirstRender();
  const { endpoint } = props;
  const { route } = useLocation();
  const defaults = endpoint.generation_defaults;
  const [name, setName] = useState(endpoint.name);
  const [summary, setSummary] = useState(endpoint.summary);
  const [description, setDescription] = useState(endpoint.description ?? '');
  const [systemPrompt, setSystemPrompt] = useState(defaults.system_prompt ?? '');
  const [temperature, setTemperature] = useState(defaults.temperature === undefined ? '' : String(defaults.temperature));
  const [maxTokens, setMaxTokens] = useState(defaults.max_tokens === undefined ? '' : String(defaults.max_tokens));
  const [specStops, setSpecStops] = useState(defaults.stop_sequences === undefined);
  const [stops, setStops] = useState((defaults.stop_sequences ?? []).map((stop) => JSON.stringify(stop).slice(1, -1)).join('\n'));
  const [saved, setSaved] = useState(false);
  const { busy, errors, failure, run } = useSubmission();

  const save = async (event: Event) => {
    event.preventDefault();
    const generation: GenerationDefaults = {};
    if (systemPrompt.trim()) generation.system_prompt = systemPrompt;
    if (temperature !== '') generation.temperature = Number(temperature);
    if (maxTokens !== '') generation.max_tokens = Number(maxTokens);
    if (!specStops) {
      // One per line, written as in JSON strings so that a new line can be given as \n.
      generation.stop_sequences = stops
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => {
          try {
            return JSON.parse(`"${line.replace(/"/g, '\\"')}"`) as string;
          } catch {
            return line;
          }
        });
    }
    setSaved(false);
    await run(async () => {
      await patch(apiPath`/endpoints/${endpoint.slug}`, { name, summary, description, generation_defaults: generation });
      setSaved(true);
      await props.reload();
    });
  };

  const remove = async () => {
    if (!confirm(`Delete the endpoint '${endpoint.name}'? It is also taken off the marketplaces it is published on.`)) return;
    await run(async () => {
      await del(apiPath`/endpoints/${endpoint.slug}`);
      route('/endpoints');
    });
  };

  const generationErrors = errorsUnder(errors, 'generation_defaults');
  return (
    <>
      <form class="card form" onSubmit={save} aria-labelledby="settings-title">
        <h2 id="settings-title">Settings</h2>
        <TextField label="Name" required maxLength={200} value={name} onInput={setName} error={errors.name} />
        <TextField
          label="Summary"
          hint="One line; the marketplace shows it."
          maxLength={2000}
          value={summary}
          onInput={setSummary}
          error={errors.summary}
        />
        <TextField
          label="Description"
          multiline
          rows={5}
          hint="The longer story (Markdown): the marketplace's readme."
          value={description}
          onInput={setDescription}
          error={errors.description}
        />
        {endpoint.model && (
          <fieldset>
            <legend>Generation defaults</legend>
            <p class="hint">What a query that does not say otherwise gets.</p>
            <TextField
              label="System prompt"
              multiline
              rows={3}
              hint="Sent first, before the passages found."
              value={systemPrompt}
              onInput={setSystemPrompt}
              error={generationErrors.system_prompt}
            />
            <div class="options-grid">
              <TextField
                label="Temperature"
                type="number"
                min={0}
                max={2}
                step={0.1}
                placeholder="0.7"
                value={temperature}
                onInput={setTemperature}
                error={generationErrors.temperature}
              />
              <TextField
                label="Max tokens"
                type="number"
                min={1}
                max={32768}
                placeholder="100"
                value={maxTokens}
                onInput={setMaxTokens}
                error={generationErrors.max_tokens}
              />
            </div>
            <CheckboxField
              label="Stop at the first line break (the specification's default)"
              hint="SyftHub's clients send no stop sequences: with this, their answers end at the first new line."
              checked={specStops}
              onChange={setSpecStops}
            />
            {!specStops && (
              <TextField
                label="Stop sequences"
                multiline
                rows={2}
                hint="One per line (\n for a line break); none: answers run to max tokens."
                value={stops}
                onInput={setStops}
                error={generationErrors.stop_sequences}
              />
            )}
          </fieldset>
        )}
        <ErrorNotice error={failure} />
        {saved && <Notice kind="success">Saved.</Notice>}
        <div class="form-actions">
          <SubmitButton busy={busy} busyLabel="Saving…">
            Save
          </SubmitButton>
        </div>
      </form>
      <section class="card danger-zone" aria-labelledby="delete-title">
        <h2 id="delete-title">Delete the endpoint</h2>
        <p>Its policies and usage records go with it; its dataset and model stay.</p>
        <button type="button" class="danger" onClick={remove}>
          Delete {endpoint.name}
        </button>
      </section>
    </>
  );
}
