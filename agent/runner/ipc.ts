// The runner's side of the agent IPC channel: every inbound message is validated against
// schemas/wire/runner.ts before it is acted on; `api.request`s are correlated with their
// `api.response` by id and their args/results validated against RunnerApiShapes.
import type { Static } from 'typebox';
import { InputError } from '../../core/errors.ts';
import { receivedCode } from '../../core/error-codes.ts';
import { compileMessageUnion, compileSchema, formatIssues, type SchemaCheck } from '../../schemas/validate.ts';
import {
  AgentToRunnerMembers,
  RunnerApiShapes,
  type RunnerStart,
  type RunnerToAgent,
  type RUNNER_APIS,
} from '../../schemas/wire/runner.ts';
import { RunnerApiError, RunnerErrorCode } from './errors.ts';

export type RunnerApi = (typeof RUNNER_APIS)[number];
export type ApiArgs<A extends RunnerApi> = Static<(typeof RunnerApiShapes)[A]['args']>;
export type ApiResult<A extends RunnerApi> = Static<(typeof RunnerApiShapes)[A]['result']>;

const inbound = compileMessageUnion(AgentToRunnerMembers);
const shapes = Object.fromEntries(
  Object.entries(RunnerApiShapes).map(([api, s]) => [api, { args: compileSchema(s.args), result: compileSchema(s.result) }]),
) as unknown as Record<RunnerApi, { args: SchemaCheck<any>; result: SchemaCheck<any> }>;

export interface ChannelHandlers {
  start(message: RunnerStart): void;
  /** A start message that failed validation (the runner reports it as the job result). */
  badStart(reason: string): void;
  cancel(reason: string, force: boolean): void;
  /** Something the runner could not act on (logged to the agent as a system line). */
  complaint(text: string): void;
}

export class RunnerChannel {
  readonly #send: (message: RunnerToAgent, done?: () => void) => void;
  #handlers: ChannelHandlers;
  readonly #pending = new Map<string, { api: RunnerApi; resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  #nextId = 0;
  #started = false;

  constructor(send: (message: RunnerToAgent, done?: () => void) => void, handlers: ChannelHandlers) {
    this.#send = send;
    this.#handlers = handlers;
  }

  send(message: RunnerToAgent, done?: () => void): void {
    this.#send(message, done);
  }

  receive(raw: unknown): void {
    const checked = inbound.validate(raw);
    if (!checked.ok) {
      const type = typeof raw === 'object' && raw !== null ? (raw as { type?: unknown }).type : undefined;
      const reason = `refused ${typeof type === 'string' ? type : 'message'}: ${formatIssues(checked.issues)}`;
      if (type === 'runner.start' && !this.#started) {
        this.#started = true;
        this.#handlers.badStart(reason);
      } else this.#handlers.complaint(reason);
      return;
    }
    const message = checked.value as Static<(typeof AgentToRunnerMembers)[number]>;
    switch (message.type) {
      case 'runner.start':
        if (this.#started) {
          this.#handlers.complaint('refused runner.start: the job has already started');
          return;
        }
        this.#started = true;
        this.#handlers.start(message as RunnerStart);
        return;
      case 'runner.cancel': {
        const cancel = message as { reason: string; force: boolean };
        this.#handlers.cancel(cancel.reason, cancel.force);
        return;
      }
      case 'api.response': {
        const response = message as { requestId: string; result?: unknown; error?: { code: string; message: string } };
        const pending = this.#pending.get(response.requestId);
        if (pending === undefined) {
          this.#handlers.complaint(`refused api.response: no request ${JSON.stringify(response.requestId)} is pending`);
          return;
        }
        this.#pending.delete(response.requestId);
        if (response.error !== undefined) {
          pending.reject(new RunnerApiError(receivedCode(response.error.code), `${pending.api} failed: ${response.error.message}`));
          return;
        }
        const result = shapes[pending.api].result.validate(response.result);
        if (!result.ok) {
          pending.reject(new RunnerApiError(RunnerErrorCode.apiResult, `${pending.api}: the agent answered with an invalid result: ${formatIssues(result.issues)}`));
          return;
        }
        pending.resolve(result.value);
        return;
      }
    }
  }

  /** Ask the agent; args are validated here so workflow authors get the path of their mistake. */
  request<A extends RunnerApi>(api: A, args: ApiArgs<A>, what: string): Promise<ApiResult<A>> {
    const checked = shapes[api].args.validate(args);
    if (!checked.ok) {
      return Promise.reject(new InputError(RunnerErrorCode.apiArgs, `${what}: ${formatIssues(checked.issues)}`));
    }
    const requestId = `r${++this.#nextId}`;
    return new Promise<ApiResult<A>>((resolve, reject) => {
      this.#pending.set(requestId, { api, resolve: resolve as (value: unknown) => void, reject });
      this.#send({ type: 'api.request', requestId, api, args });
    });
  }

  /** Rejects every pending request (the job is over). */
  close(reason: string): void {
    for (const [id, pending] of this.#pending) {
      this.#pending.delete(id);
      pending.reject(new RunnerApiError(RunnerErrorCode.cancelled, `${pending.api}: ${reason}`));
    }
  }
}
