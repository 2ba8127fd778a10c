"""Thrift calls on the notification log: what replication tools and other caches read."""
from __future__ import annotations

from hmsproxy.events import messages
from hmsproxy.handler.common import Calls, lower, split_catalog
from hmsproxy.idl import hms
from hmsproxy.idl.fields import present

MAX_EVENTS_PER_CALL = 100_000


class NotificationCalls(Calls):

    def get_next_notification(self, rqst: hms.NotificationEventRequest) -> hms.NotificationEventResponse:
        limit = rqst.maxEvents if rqst.maxEvents and rqst.maxEvents > 0 else MAX_EVENTS_PER_CALL
        events = self.ctx.store.get_events(
            rqst.lastEvent or 0, min(limit, MAX_EVENTS_PER_CALL), skip_types=list(rqst.eventTypeSkipList or []),
            cat=rqst.catName.lower() if rqst.catName else None, db=rqst.dbName.lower() if rqst.dbName else None,
            tables=[t.lower() for t in rqst.tableNames] if rqst.tableNames else None)
        return hms.NotificationEventResponse(events=events)

    def get_current_notificationEventId(self) -> hms.CurrentNotificationEventId:
        return hms.CurrentNotificationEventId(eventId=self.ctx.store.current_event_id())

    def get_notification_events_count(self, rqst: hms.NotificationEventsCountRequest
                                      ) -> hms.NotificationEventsCountResponse:
        count = self.ctx.store.count_events(rqst.fromEventId or 0, lower(rqst.dbName, "database"),
                                            rqst.catName.lower() if rqst.catName else None, rqst.toEventId)
        if rqst.limit and rqst.limit > 0:
            count = min(count, rqst.limit)
        return hms.NotificationEventsCountResponse(eventsCount=count)

    def fire_listener_event(self, rqst: hms.FireEventRequest) -> hms.FireEventResponse:
        """Records INSERT events for data a client wrote (one per InsertEventRequestData)."""
        catalog, db = split_catalog(rqst.dbName, rqst.catName)
        table = self.ctx.store.get_table(catalog, db, lower(rqst.tableName, "table"))
        data = rqst.data
        inserts = []
        if data is not None:
            inserts = ([data.insertData] if data.insertData else []) + list(data.insertDatas or [])
        events = []
        for insert in inserts:
            values = insert.partitionVal or rqst.partitionVals
            partition = self.ctx.store.get_partition(catalog, db, present(table.tableName), values) if values else None
            events.append(messages.insert(table, partition, list(insert.filesAdded or []),
                                          list(insert.filesAddedChecksum or []), replace=bool(insert.replace)))
        return hms.FireEventResponse(eventIds=self.ctx.store.add_events(events))
