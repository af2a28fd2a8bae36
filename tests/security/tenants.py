"""The tenants of the security tests: an admin and members of two namespaces, with their tokens,
and the configuration that declares them (a LocalQueue `q` in team-b beside the base config's
team-a one, and a ServerAuth). One place, so that every test means the same people."""

TOKENS = {"admin": "admin-token-0123456789", "alice": "alice-token-0123456789",
          "carol": "carol-token-0123456789", "bob": "bob-token-012345678901"}
NAMESPACES = {"alice": "team-a", "carol": "team-a", "bob": "team-b"}


def auth_doc(join, members=("alice", "bob")):
    """The LocalQueue of team-b and a ServerAuth with `join` as join token, the admin and
    `members` (names of TOKENS)."""
    lines = [f"  - {{name: {m}, token: {TOKENS[m]}, role: member, namespaces: [{NAMESPACES[m]}]}}"
             for m in members]
    return """
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: q, namespace: team-b}
spec: {clusterQueue: cq}
---
apiVersion: sluice.dev/v1alpha1
kind: ServerAuth
metadata: {name: tokens}
spec:
  joinToken: %s
  tokens:
  - {name: admin, token: %s, role: admin}
%s
""" % (join, TOKENS["admin"], "\n".join(lines))
