"""Provider id and versions (kept in one place; the result, the receipt and status report them)."""

from typing import Final, Literal, get_args

#: The provider id: the one place it is spelled (also the CLI's program name and the config folder's name).
ProviderId = Literal["obelisk-session-evidence"]
PROVIDER_ID: Final[ProviderId] = get_args(ProviderId)[0]
PROVIDER_VERSION = "0.1.0"
CONTRACT_VERSION = "v0"
