import { resendEmail } from "../../actions/emails.js";
import { listEmails } from "../../domain/email/outbox.js";
import { integerOption, stringOption, UsageError } from "../args.js";
import { cliActor, columns, type Command, describe } from "./shared.js";
import { type EmailState, emailStates, pageLimits } from "../../contracts/vocabulary.js";

function stateOption(text: string | undefined): EmailState | undefined {
  if (text === undefined) return undefined;
  if (!(emailStates as readonly string[]).includes(text)) {
    throw new UsageError(`--state must be one of ${emailStates.join(", ")}`);
  }
  return text as EmailState;
}

export const emailCommands: Record<string, Command> = {
  "emails list": {
    help: {
      summary: "The e-mail outbox, newest first, with states and SMTP replies",
      synopsis: "[--state pending|sending|sent|failed] [--product <slug>] [--limit <n>]",
      options: [
        ["--state <state>", `only messages in this state: ${emailStates.join(", ")}`],
        ["--product <slug>", "only this product's messages"],
        ["--limit <n>", `at most n messages (1-${pageLimits.max}, default ${pageLimits.default})`],
      ],
      example: "shipkey emails list --state failed",
    },
    run: async (db, args, options) => {
      if (args.length > 0) throw new UsageError("emails list takes no arguments");
      const limit = integerOption(options, "limit") ?? pageLimits.default;
      if (limit < 1 || limit > pageLimits.max) {
        throw new UsageError(`--limit must be from 1 to ${pageLimits.max}`);
      }
      const state = stateOption(stringOption(options, "state"));
      const product = stringOption(options, "product");
      const page = await listEmails(db, {
        limit,
        productIds: null,
        ...(state === undefined ? {} : { state }),
        ...(product === undefined ? {} : { productSlug: product }),
      });
      return {
        data: page.items,
        text: columns(
          page.items.map((m) => ({
            created: m.createdAt,
            id: m.id,
            kind: m.kind,
            to: m.to,
            state: m.state,
            attempts: m.attempts,
            reply: m.lastResponse,
          })),
          "No e-mail in the outbox.",
        ),
      };
    },
  },
  "emails resend": {
    help: {
      summary: "Send a message again, or every failed one (the server sends them)",
      synopsis: "<id> | --failed",
      options: [
        ["<id>", "the message's id, as emails list shows it"],
        ["--failed", "every failed message (after fixing SMTP_URL, say)"],
      ],
      example: "shipkey emails resend eml_01JD8X3V6Q2WHM4KZR7TXN",
    },
    run: async (db, args, options) => {
      const all = options.failed === true;
      if (all === (args.length === 1) || args.length > 1) {
        throw new UsageError("give one message id, or --failed");
      }
      const resent = [];
      if (!all) resent.push(await resendEmail(db, cliActor(), args[0] ?? ""));
      // Each resent message leaves the failed ones, so every page is the first; one the server
      // fails again meanwhile is not taken twice.
      const seen = new Set<string>();
      while (all) {
        const page = await listEmails(db, {
          limit: pageLimits.max,
          productIds: null,
          state: "failed",
        });
        const fresh = page.items.filter((m) => !seen.has(m.id));
        if (fresh.length === 0) break;
        for (const m of fresh) {
          seen.add(m.id);
          resent.push(await resendEmail(db, cliActor(), m.id));
        }
      }
      const [one] = resent;
      return {
        data: all ? resent : one,
        text:
          !all && one
            ? describe({ id: one.id, kind: one.kind, to: one.to, state: one.state })
            : `Queued ${resent.length} failed message(s) again.`,
      };
    },
  },
};
