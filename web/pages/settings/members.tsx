import { useState } from 'preact/hooks';
import { apiPath, del, post } from '../../api.ts';
import { ErrorNotice, TextField } from '../../components/ui.tsx';
import { date } from '../../lib/format.ts';
import { useResource, useSubmission } from '../../lib/hooks.ts';
import type { Member } from '../../views.ts';

/** Settings, third section: who works in the tenant; its owner adds and removes members. */
export function Members(props: { tenant: string; me: string }) {
  const path = apiPath`/tenants/${props.tenant}/members`;
  const members = useResource<Member[]>(path);
  const [email, setEmail] = useState('');
  const submission = useSubmission();
  const { errors, failure } = submission;
  const owner = members.data?.some((member) => member.email === props.me && member.role === 'owner') ?? false;
  const run = (work: () => Promise<unknown>) =>
    submission.run(async () => {
      await work();
      await members.reload();
    });
  return (
    <section class="card" aria-labelledby="members-title">
      <h2 id="members-title">Members of {props.tenant}</h2>
      <p class="hint">Members manage the tenant's datasets, models and endpoints with you; they act in it with the X-Tenant-Name header.</p>
      <ErrorNotice error={members.error} />
      {members.data && (
        <table class="table" data-settings="members">
          <caption class="visually-hidden">Members of the tenant</caption>
          <thead>
            <tr>
              <th scope="col">E-mail</th>
              <th scope="col">Role</th>
              <th scope="col">Since</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {members.data.map((member) => (
              <tr key={member.email}>
                <td>{member.email}</td>
                <td>{member.role}</td>
                <td class="nowrap">{date(member.created_at)}</td>
                <td class="num">
                  {owner && member.role !== 'owner' && (
                    <button
                      type="button"
                      class="danger small"
                      aria-label={`Remove ${member.email}`}
                      onClick={() => void run(() => del(apiPath`/tenants/${props.tenant}/members/${member.email}`))}
                    >
                      Remove
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <form
        class="inline-form"
        onSubmit={(event) => {
          event.preventDefault();
          void run(async () => {
            await post(path, { email });
            setEmail('');
          });
        }}
      >
        <TextField
          label="Add a member by e-mail"
          type="email"
          required
          hint="They must have registered on this knode first."
          value={email}
          onInput={setEmail}
          error={errors.email}
        />
        <button type="submit">Add</button>
      </form>
      <ErrorNotice error={failure} />
    </section>
  );
}
