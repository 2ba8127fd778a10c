// fb303: the base service every Hive Metastore service extends.
//
// hmsproxy's own rendering of Facebook's fb303 interface. Only what goes over the wire matters
// here (names, field ids, types, oneway-ness); it is identical to the fb303 that Hive's IDL
// includes, so clients that call e.g. `shutdown` (Spark does, when it closes a connection)
// are understood.

namespace java com.facebook.fb303
namespace py fb303

// Status a service reports about itself.
enum fb_status {
  DEAD = 0,
  STARTING = 1,
  ALIVE = 2,
  STOPPING = 3,
  STOPPED = 4,
  WARNING = 5,
}

service FacebookService {
  string getName(),
  string getVersion(),
  fb_status getStatus(),
  string getStatusDetails(),
  map<string, i64> getCounters(),
  i64 getCounter(1: string key),
  void setOption(1: string key, 2: string value),
  string getOption(1: string key),
  map<string, string> getOptions(),
  string getCpuProfile(1: i32 profileDurationInSec),
  i64 aliveSince(),
  oneway void reinitialize(),
  oneway void shutdown(),
}
