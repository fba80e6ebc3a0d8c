import type { AddressInfo } from "node:net";
import { type ParsedMail, simpleParser } from "mailparser";
import { SMTPServer } from "smtp-server";

/** A refusal the receiver answers with: an SMTP reply code and its text. */
export interface Refusal {
  code: number;
  text: string;
}

/**
 * A real SMTP server on loopback (nodemailer's smtp-server), requiring AUTH PLAIN/LOGIN with
 * `user`/`pass`, no TLS. Each accepted message is parsed with mailparser's simpleParser. `rcpt`
 * and `data` decide, per attempt, whether to refuse the recipient or the message.
 */
export interface SmtpReceiver {
  port: number;
  /** SMTP_URL for this server, with the given password (the right one unless given). */
  url(pass?: string): string;
  received: ParsedMail[];
  /** Called at each RCPT TO: a refusal, or null to accept. */
  rcpt: (address: string) => Refusal | null;
  /** Called at each message's end of DATA: a refusal, null to accept, "hang" to never answer. */
  data: () => Refusal | null | "hang";
  /** Messages whose DATA arrived, answered or not. */
  dataSeen: number;
  /** How many connections authenticated, and how many were refused for a wrong password. */
  logins: { ok: number; refused: number };
  close(): Promise<void>;
}

export const smtpUser = "shipkey";
export const smtpPass = "correct horse";

const refusal = (r: Refusal) => Object.assign(new Error(r.text), { responseCode: r.code });

export async function startSmtpReceiver(): Promise<SmtpReceiver> {
  const receiver: Omit<SmtpReceiver, "port" | "url" | "close"> = {
    received: [],
    rcpt: () => null,
    data: () => null,
    logins: { ok: 0, refused: 0 },
    dataSeen: 0,
  };
  const server = new SMTPServer({
    disabledCommands: ["STARTTLS"],
    allowInsecureAuth: true,
    authMethods: ["PLAIN", "LOGIN"],
    logger: false,
    closeTimeout: 1_000,
    onAuth(auth, _session, callback) {
      if (auth.username === smtpUser && auth.password === smtpPass) {
        receiver.logins.ok++;
        callback(null, { user: auth.username });
        return;
      }
      receiver.logins.refused++;
      callback(refusal({ code: 535, text: "Authentication credentials invalid" }));
    },
    onRcptTo(address, _session, callback) {
      const refused = receiver.rcpt(address.address);
      callback(refused ? refusal(refused) : null);
    },
    onData(stream, _session, callback) {
      simpleParser(stream).then(
        (mail) => {
          receiver.dataSeen++;
          const refused = receiver.data();
          if (refused === "hang") return;
          if (refused) return callback(refusal(refused));
          receiver.received.push(mail);
          callback();
        },
        (err: Error) => callback(err),
      );
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.server.address() as AddressInfo).port;
  return Object.assign(receiver, {
    port,
    url: (pass = smtpPass) => `smtp://${smtpUser}:${encodeURIComponent(pass)}@127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}
