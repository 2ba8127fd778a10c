"""The REST catalog's errors as the spec's ErrorModel: each carries its HTTP code and the `type` clients read.

Iceberg's Java client picks its exception from `type` (NoSuchNamespaceException and NoSuchTableException are both
404), and a commit answered 5xx means "state unknown" to every client, so only a commit whose outcome this server
cannot tell answers 5xx; everything else this server refuses is 4xx."""
from __future__ import annotations


class RestError(Exception):
    code = 500
    type = "ServiceFailureException"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def body(self) -> dict[str, dict[str, object]]:
        return {"error": {"message": self.message, "type": self.type, "code": self.code}}


class BadRequest(RestError):
    code, type = 400, "BadRequestException"


class NotAuthorized(RestError):
    code, type = 401, "NotAuthorizedException"


class NotFound(RestError):
    code, type = 404, "NotFoundException"


class NoSuchNamespace(RestError):
    code, type = 404, "NoSuchNamespaceException"


class NoSuchTable(RestError):
    code, type = 404, "NoSuchTableException"


class NoSuchView(RestError):
    code, type = 404, "NoSuchViewException"


class NoSuchPlanId(RestError):
    code, type = 404, "NoSuchPlanIdException"


class NoSuchPlanTask(RestError):
    code, type = 404, "NoSuchPlanTaskException"


class MethodNotAllowed(RestError):
    code, type = 405, "MethodNotAllowedException"


class AlreadyExists(RestError):
    code, type = 409, "AlreadyExistsException"


class NamespaceNotEmpty(RestError):
    code, type = 409, "NamespaceNotEmptyException"


class CommitFailed(RestError):
    """The requirements did not hold, or another writer committed first: the client refreshes and retries."""
    code, type = 409, "CommitFailedException"


class RequestTooLarge(RestError):
    code, type = 413, "RequestTooLargeException"


class UnprocessableEntity(RestError):
    code, type = 422, "UnprocessableEntityException"


class CommitStateUnknown(RestError):
    """The commit may or may not have been applied (the database failed while committing): the client must not
    assume it failed and clean up the files it wrote."""
    code, type = 500, "CommitStateUnknownException"


class ServiceUnavailable(RestError):
    code, type = 503, "ServiceUnavailableException"
