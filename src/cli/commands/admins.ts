import { randomBytes } from "node:crypto";
import { listAdmins } from "../../domain/admins/admins.js";
import { createAdmin, removeAdmin, resetAdminPassword } from "../../actions/admins.js";
import { type Options, requiredOption, UsageError } from "../args.js";
import { cliActor, type Command, describe, noArguments, table } from "./shared.js";

const emailOption = ["--email <email>", "the admin's email address (required)"] as const;
const passwordOption = [
  "--password-stdin",
  "read the password from stdin; default: generated, shown once",
] as const;

export const adminCommands: Record<string, Command> = {
  "admins create": {
    help: {
      summary: "Create an admin who signs in to the dashboard",
      synopsis: "--email <email> [--password-stdin]",
      options: [emailOption, passwordOption],
      example: "shipkey admins create --email ops@example.com",
    },
    run: async (db, args, options, context) => {
      noArguments(args);
      const email = requiredOption(options, "email");
      const { password, generated } = await passwordFrom(options, context.stdin);
      const admin = await createAdmin(db, cliActor(), { email, password });
      return {
        data: { ...admin, ...(generated ? { password } : {}) },
        text: `${describe({ ...admin })}${generated ? `\n\nPassword (shown once): ${password}` : ""}\n\nSign in at /admin.`,
      };
    },
  },
  "admins list": {
    help: {
      summary: "List the admins",
      synopsis: "",
      options: [],
      example: "shipkey admins list",
    },
    run: async (db, args) => {
      noArguments(args);
      const admins = await listAdmins(db);
      return {
        data: admins,
        text: table(
          admins.map((a) => ({ ...a })),
          "No admins yet.",
        ),
      };
    },
  },
  "admins reset-password": {
    help: {
      summary: "Give an admin a new password; their sessions end",
      synopsis: "--email <email> [--password-stdin]",
      options: [emailOption, passwordOption],
      example:
        "shipkey admins reset-password --email ops@example.com --password-stdin < password.txt",
    },
    run: async (db, args, options, context) => {
      noArguments(args);
      const email = requiredOption(options, "email");
      const { password, generated } = await passwordFrom(options, context.stdin);
      const admin = await resetAdminPassword(db, cliActor(), { email, password });
      return {
        data: { ...admin, ...(generated ? { password } : {}) },
        text: `${describe({ ...admin })}${generated ? `\n\nPassword (shown once): ${password}` : ""}\n\nThe admin's sessions have ended.`,
      };
    },
  },
  "admins remove": {
    help: {
      summary: "Remove an admin and end their sessions; never the last admin",
      synopsis: "--email <email>",
      options: [emailOption],
      example: "shipkey admins remove --email ops@example.com",
    },
    run: async (db, args, options) => {
      noArguments(args);
      const admin = await removeAdmin(db, cliActor(), requiredOption(options, "email"));
      return { data: { ...admin, removed: true }, text: `Removed admin ${admin.email}.` };
    },
  },
};

/** With --password-stdin the password is read from stdin; otherwise a strong one is generated. */
async function passwordFrom(
  options: Options,
  stdin: AsyncIterable<string | Buffer>,
): Promise<{ password: string; generated: boolean }> {
  if (options["password-stdin"] === true) {
    return { password: await readPassword(stdin), generated: false };
  }
  return { password: randomBytes(18).toString("base64url"), generated: true };
}

async function readPassword(stdin: AsyncIterable<string | Buffer>): Promise<string> {
  let input = "";
  for await (const chunk of stdin) input += chunk.toString();
  const password = input.replace(/\r?\n$/, "");
  if (password === "") throw new UsageError("--password-stdin: no password on standard input");
  return password;
}
