import { useEffect, useState } from 'preact/hooks';
import { NAME_MAX_LENGTH } from '../../../src/http/field-bounds.ts';
import { ApiError, apiPath, del, patch, post } from '../../api.ts';
import { errorsUnder, type FormValues, initialValues, labelOf, SchemaForm, toConfiguration } from '../../components/schema-form.tsx';
import { Badge, Empty, ErrorNotice, Field, Loading, Notice, SubmitButton, TextField } from '../../components/ui.tsx';
import { useDebounced, useFirstRender, useSubmission } from '../../lib/hooks.ts';
import { typeLabel, typeNamed, useTypes } from '../../lib/types.ts';
import { session } from '../../session.ts';
import type { AccessCheckResult, Endpoint, JsonSchema, Policy, TypeInfo } from '../../views.ts';

/**
 * The endpoint's policies: every type the server knows (`GET /api/v1/types`: access, rate limits,
 * accounting, prices...) with its form built from its schema. Access lists get a live check of an e-mail.
 */
export function Policies(props: { endpoint: Endpoint; reload: () => Promise<void> }) {
  useFirstRender();
  const types = useTypes();
  // The owner's own e-mail (asked once at login): an access list that would refuse it is warned about before it is saved.
  const owner = session.email.value ?? undefined;
  const policies = props.endpoint.policies ?? [];
  if (types.error) return <ErrorNotice error={types.error} />;
  if (!types.data) return <Loading what="policy types" />;
  const kinds = types.data.policy;
  return (
    <>
      <section class="card" aria-labelledby="policies-title">
        <h2 id="policies-title">Policies</h2>
        <p class="hint">
          Every query passes them in the order access, rate limits, then payment, whatever order they were added in; a PII filter then
          rewrites the answer before it is sent. Your own queries from the playground pass them too.
        </p>
        {policies.length === 0 ? (
          <Empty>No policy: anyone with a valid token may query, as often as the general limits allow.</Empty>
        ) : (
          <ul class="policy-list">
            {policies.map((policy) => (
              <PolicyItem key={policy.id} policy={policy} info={typeNamed(kinds, policy.policy_type)} reload={props.reload} owner={owner} />
            ))}
          </ul>
        )}
      </section>
      <NewPolicy endpoint={props.endpoint} kinds={kinds} reload={props.reload} owner={owner} />
    </>
  );
}

/** `mode: allow` with its patterns, `rate: 10/m`...: a configuration in one line (empty text left out). */
function describe(configuration: Record<string, unknown>): string {
  return Object.entries(configuration)
    .filter(([, value]) => value !== '')
    .map(([key, value]) => `${labelOf(key)}: ${Array.isArray(value) ? value.join(', ') : String(value)}`)
    .join(' · ');
}

function PolicyItem(props: { policy: Policy; info: TypeInfo | undefined; reload: () => Promise<void>; owner: string | undefined }) {
  const { policy } = props;
  const [editing, setEditing] = useState(false);
  const [failure, setFailure] = useState<Error | undefined>(undefined);
  const remove = async () => {
    if (!confirm(`Delete the policy '${policy.name}'?`)) return;
    try {
      await del(apiPath`/policies/${policy.id}`);
      await props.reload();
    } catch (error) {
      setFailure(error as Error);
    }
  };
  return (
    <li class="policy">
      <div class="policy-head">
        <div>
          <Badge>{typeLabel(policy.policy_type)}</Badge> <strong>{policy.name}</strong>
          <p class="policy-config">{describe(policy.configuration)}</p>
        </div>
        <div class="actions">
          <button type="button" class="secondary small" aria-expanded={editing} onClick={() => setEditing(!editing)}>
            {editing ? 'Close' : 'Edit'}
            <span class="visually-hidden"> {policy.name}</span>
          </button>
          <button type="button" class="danger small" onClick={remove}>
            Delete<span class="visually-hidden"> {policy.name}</span>
          </button>
        </div>
      </div>
      <ErrorNotice error={failure} />
      {editing && props.info && (
        <PolicyForm
          schema={props.info.configuration_schema}
          initial={policy.configuration}
          name={policy.name}
          submitLabel="Save"
          owner={props.owner}
          onSubmit={async (name, configuration) => {
            await patch(apiPath`/policies/${policy.id}`, { name, configuration });
            setEditing(false);
            await props.reload();
          }}
        />
      )}
    </li>
  );
}

function NewPolicy(props: { endpoint: Endpoint; kinds: TypeInfo[]; reload: () => Promise<void>; owner: string | undefined }) {
  const [type, setType] = useState(props.kinds[0]?.type ?? 'access');
  const [round, setRound] = useState(0);
  const info = typeNamed(props.kinds, type);
  return (
    <section class="card" aria-labelledby="new-policy-title">
      <h2 id="new-policy-title">Add a policy</h2>
      <fieldset class="choices">
        <legend>Type</legend>
        {props.kinds.map((kind) => (
          <label key={kind.type} class={`choice${kind.type === type ? ' chosen' : ''}`}>
            <input type="radio" name="policy_type" value={kind.type} checked={kind.type === type} onChange={() => setType(kind.type)} />
            <span class="choice-title">{typeLabel(kind.type)}</span>
            <span class="choice-text">{kind.description}</span>
          </label>
        ))}
      </fieldset>
      {info && (
        <PolicyForm
          key={`${type}-${round}`}
          schema={info.configuration_schema}
          name=""
          defaultName={typeLabel(type)}
          submitLabel="Add the policy"
          owner={props.owner}
          onSubmit={async (name, configuration) => {
            await post('/policies/', { name, policy_type: type, endpoint_id: props.endpoint.id, configuration });
            setRound(round + 1);
            await props.reload();
          }}
        />
      )}
    </section>
  );
}

function PolicyForm(props: {
  schema: JsonSchema;
  initial?: Record<string, unknown>;
  name: string;
  defaultName?: string;
  submitLabel: string;
  /** The owner's e-mail, checked against an access list as it is written and once more before it is saved. */
  owner?: string | undefined;
  onSubmit: (name: string, configuration: Record<string, unknown>) => Promise<void>;
}) {
  const [name, setName] = useState(props.name);
  const [values, setValues] = useState<FormValues>(() => initialValues(props.schema, props.initial));
  const { busy, errors, setErrors, failure, run } = useSubmission();
  const { configuration } = toConfiguration(props.schema, values);
  const checksEmails = props.schema.properties?.patterns !== undefined && props.schema.properties?.mode !== undefined;
  // Waits for a pause in the typing: each check is a request, counted in the general API limits.
  const ownerCheck = useAccessCheck(checksEmails ? configuration : undefined, props.owner ?? '', 700);

  const submit = async (event: Event) => {
    event.preventDefault();
    const built = toConfiguration(props.schema, values);
    if (Object.keys(built.errors).length > 0) {
      setErrors(Object.fromEntries(Object.entries(built.errors).map(([key, message]) => [`configuration.${key}`, message])));
      return;
    }
    await run(async () => {
      if (checksEmails && props.owner && !(await ownerMaySave(built.configuration, props.owner, ownerCheck))) return;
      await props.onSubmit(name.trim() || props.defaultName || 'policy', built.configuration);
    });
  };
  const configurationErrors = errorsUnder(errors, 'configuration');
  return (
    <form class="form policy-form" onSubmit={submit}>
      <TextField
        label="Policy name"
        maxLength={NAME_MAX_LENGTH}
        placeholder={props.defaultName}
        value={name}
        onInput={setName}
        error={errors.name}
      />
      <SchemaForm schema={props.schema} values={values} onChange={setValues} errors={configurationErrors} />
      {checksEmails && ownerCheck && 'check' in ownerCheck && !ownerCheck.check.allowed && (
        <div class="owner-warning" data-owner-warning>
          <Notice kind="warning" title="This list refuses you.">
            {ownerCheck.email} {ownerCheck.check.matched_pattern ? `matches ${ownerCheck.check.matched_pattern}` : 'matches no pattern'}
            {configuration.mode === 'deny' ? ' of this deny list' : ''}: your own questions, the playground's included, would be refused.
            {configuration.mode === 'deny' ? ' Take the pattern out' : ' Add your e-mail to the patterns'} to keep asking.
          </Notice>
        </div>
      )}
      {checksEmails && <AccessCheck configuration={configuration} />}
      {configurationErrors._ && <Notice kind="error">{configurationErrors._}</Notice>}
      {/* The type itself can be refused (a PII filter on an endpoint that does not answer with a model). */}
      {errors.policy_type && <Notice kind="error">{errors.policy_type}</Notice>}
      <ErrorNotice error={failure} />
      <div class="form-actions">
        <SubmitButton busy={busy} busyLabel="Saving…">
          {props.submitLabel}
        </SubmitButton>
      </div>
    </form>
  );
}

/**
 * Whether an access list may be saved for its owner: yes when it lets them in (or has no pattern), else when they
 * confirm. The list saved is the one checked: the live check's answer when it was for this very list, else asked now.
 */
async function ownerMaySave(configuration: Record<string, unknown>, owner: string, ownerCheck: CheckAnswer | undefined): Promise<boolean> {
  if (!hasPatterns(configuration)) return true;
  const shown = ownerCheck && 'check' in ownerCheck && ownerCheck.asked === JSON.stringify(configuration) ? ownerCheck.check : undefined;
  const check = shown ?? (await post<AccessCheckResult>('/policies/access/check', { configuration, email: owner }));
  return (
    check.allowed ||
    confirm(
      `This list refuses you (${owner}): your own questions, the playground's included, will be answered 403 until you change it. Save it anyway?`,
    )
  );
}

function hasPatterns(configuration: Record<string, unknown>): boolean {
  return Array.isArray(configuration.patterns) && configuration.patterns.length > 0;
}

/** The answer for `email`, and the configuration it was asked for (as JSON). */
type CheckAnswer = { email: string; asked: string; check: AccessCheckResult } | { email: string; asked: string; error: string };

/**
 * Whether `email` passes the access list `configuration` (undefined: nothing to check), asked of the server as
 * the list changes (`POST /policies/access/check`, the query's own matching: RE2, whole e-mail).
 */
function useAccessCheck(configuration: Record<string, unknown> | undefined, email: string, wait = 300): CheckAnswer | undefined {
  const [result, setResult] = useState<CheckAnswer | undefined>(undefined);
  const request = useDebounced(configuration ? JSON.stringify({ configuration, email: email.trim() }) : '', wait);

  useEffect(() => {
    const asked = request ? (JSON.parse(request) as { configuration: Record<string, unknown>; email: string }) : undefined;
    if (!asked?.email || !hasPatterns(asked.configuration)) {
      setResult(undefined);
      return;
    }
    let current = true;
    const configurationAsked = JSON.stringify(asked.configuration);
    post<AccessCheckResult>('/policies/access/check', asked)
      .then((check) => current && setResult({ email: asked.email, asked: configurationAsked, check }))
      .catch(
        (error) =>
          current &&
          setResult({ email: asked.email, asked: configurationAsked, error: error instanceof ApiError ? error.message : String(error) }),
      );
    return () => {
      current = false;
    };
  }, [request]);
  return result;
}

/** "Would this e-mail pass?", answered by the server with the query's own matching (RE2, whole e-mail). */
function AccessCheck(props: { configuration: Record<string, unknown> }) {
  const [email, setEmail] = useState('');
  const result = useAccessCheck(props.configuration, email);

  return (
    <div class="access-check">
      <Field label="Would this e-mail pass?" hint="Checked as a query would be, as you type.">
        {({ id, describedBy }) => (
          <input
            id={id}
            type="email"
            autoComplete="off"
            placeholder="someone@example.com"
            aria-describedby={describedBy}
            value={email}
            onInput={(event) => setEmail(event.currentTarget.value)}
          />
        )}
      </Field>
      <div aria-live="polite" class="check-result">
        {result && 'check' in result && (
          <p class={result.check.allowed ? 'pass' : 'refused'}>
            {result.check.allowed ? '✓ Allowed: ' : '✗ Refused: '}
            {result.email}
            {result.check.matched_pattern ? ` matches ${result.check.matched_pattern}` : ' matches no pattern'}
          </p>
        )}
        {result && 'error' in result && <p class="error-text">Cannot check yet: {result.error}</p>}
      </div>
    </div>
  );
}
