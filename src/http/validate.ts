import type { z } from 'zod';
import { invalidParameters, type ParamError } from './problem.js';

/** Turns one zod issue into a sentence fragment that follows the parameter's name. */
function describeIssue(issue: z.ZodIssue, value: unknown): string {
  switch (issue.code) {
    case 'invalid_enum_value':
      return `must be one of ${issue.options.join(', ')}`;
    case 'invalid_type':
      if (value === undefined) return 'is required';
      if (Array.isArray(value)) return 'must be given once';
      if (issue.expected === 'number' || issue.expected === 'integer') return 'must be a number';
      return `must be a ${issue.expected}`;
    case 'too_small':
      return issue.type === 'string' ? (issue.minimum === 1 ? 'must not be empty' : `must be at least ${issue.minimum} characters`) : `must be at least ${issue.minimum}`;
    case 'too_big':
      return issue.type === 'string' ? `must be at most ${issue.maximum} characters` : `must be at most ${issue.maximum}`;
    default:
      return issue.message.charAt(0).toLowerCase() + issue.message.slice(1);
  }
}

/**
 * Parses request input with the route's schema. Throws one 400 problem that lists every wrong
 * parameter, not only the first.
 */
export function parseInput<S extends z.ZodTypeAny>(schema: S, input: Record<string, unknown>): z.infer<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const errors: ParamError[] = result.error.issues.map((issue) => {
    const param = issue.path.length > 0 ? issue.path.join('.') : 'request';
    return { param, message: describeIssue(issue, input[String(issue.path[0])]) };
  });
  throw invalidParameters(errors);
}
