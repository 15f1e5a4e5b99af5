// What the event-dlq commands share: the filter flags, and the one check of what a retry or
// discard acts on (named ids, or --all narrowed by --org/--name; never both, never neither).
import { Flags } from '@oclif/core';
import { USAGE_ERROR_CODE } from '../../../core/cli/base-command.ts';
import { InputError } from '../../../core/errors.ts';
import type { DlqFilter } from '../../../kernel/orchestrator/events/dlq.ts';

export { adminConfig, databaseFlag, databaseUrl, withDatabase } from '../source/shared.ts';

export const filterFlags = {
  org: Flags.string({ description: 'only events of this org' }),
  name: Flags.string({ description: 'only events of this name' }),
};

export function filterOf(flags: { org?: string | undefined; name?: string | undefined }): DlqFilter {
  return { ...(flags.org === undefined ? {} : { orgId: flags.org }), ...(flags.name === undefined ? {} : { name: flags.name }) };
}

/** The selection of a retry or discard; a usage error (exit 2) when it names nothing or mixes ids with --all. */
export function selectionOf(verb: 'retry' | 'discard', ids: readonly string[], flags: { all: boolean; org?: string | undefined; name?: string | undefined }): { ids: string[]; filter: DlqFilter & { all: boolean } } {
  if (ids.length === 0 && !flags.all) {
    throw new InputError(USAGE_ERROR_CODE, `name the event ids to ${verb} (from "svc-admin event-dlq list"), or pass --all (narrowed with --org/--name)`);
  }
  if (ids.length > 0 && flags.all) throw new InputError(USAGE_ERROR_CODE, `name event ids or pass --all, not both`);
  if (ids.length > 0 && (flags.org !== undefined || flags.name !== undefined)) {
    throw new InputError(USAGE_ERROR_CODE, '--org and --name narrow --all; they do not apply to named event ids');
  }
  return { ids: [...ids], filter: { ...filterOf(flags), all: flags.all } };
}

/** One line of free text, at most `max` characters. */
export function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}
