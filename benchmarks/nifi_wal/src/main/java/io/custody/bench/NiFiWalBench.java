package io.custody.bench;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.File;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.nifi.wali.SequentialAccessWriteAheadLog;
import org.wali.SerDe;
import org.wali.SerDeFactory;
import org.wali.UpdateType;
import org.wali.WriteAheadRepository;

/**
 * The NiFi anchor of `custody bench wal`: drives NiFi's own write-ahead log
 * (SequentialAccessWriteAheadLog, what NiFi's FlowFile repository uses) with the
 * same records custody's side writes: about 10 attributes and a content claim.
 *
 * Usage: NiFiWalBench throughput DIR THREADS BATCH SECONDS SYNC(true|false)
 *        NiFiWalBench recover DIR RECORDS
 * Prints one JSON object on stdout.
 */
public final class NiFiWalBench {

    static final class Rec {
        final String id;
        final Map<String, String> attributes;
        final String container;
        final int section;
        final String resourceId;
        final long claimOffset;
        final long claimLength;
        final String queue;
        final long size;
        final long entryDate;
        final long lineageStartDate;
        final UpdateType type;

        Rec(String id, Map<String, String> attributes, String container, int section, String resourceId,
            long claimOffset, long claimLength, String queue, long size, long entryDate, long lineageStartDate,
            UpdateType type) {
            this.id = id;
            this.attributes = attributes;
            this.container = container;
            this.section = section;
            this.resourceId = resourceId;
            this.claimOffset = claimOffset;
            this.claimLength = claimLength;
            this.queue = queue;
            this.size = size;
            this.entryDate = entryDate;
            this.lineageStartDate = lineageStartDate;
            this.type = type;
        }
    }

    /** A length-prefixed binary SerDe, the same shape of bytes as custody's. */
    static final class RecSerDe implements SerDe<Rec> {
        @Override
        public void serializeEdit(Rec previous, Rec rec, DataOutputStream out) throws IOException {
            serializeRecord(rec, out);
        }

        @Override
        public void serializeRecord(Rec rec, DataOutputStream out) throws IOException {
            out.writeByte(rec.type.ordinal());
            out.writeUTF(rec.id);
            if (rec.type == UpdateType.DELETE) {
                return;
            }
            out.writeUTF(rec.queue);
            out.writeLong(rec.size);
            out.writeLong(rec.entryDate);
            out.writeLong(rec.lineageStartDate);
            out.writeUTF(rec.container);
            out.writeShort(rec.section);
            out.writeUTF(rec.resourceId);
            out.writeLong(rec.claimOffset);
            out.writeLong(rec.claimLength);
            out.writeShort(rec.attributes.size());
            for (Map.Entry<String, String> entry : rec.attributes.entrySet()) {
                out.writeUTF(entry.getKey());
                out.writeUTF(entry.getValue());
            }
        }

        @Override
        public Rec deserializeEdit(DataInputStream in, Map<Object, Rec> current, int version) throws IOException {
            return deserializeRecord(in, version);
        }

        @Override
        public Rec deserializeRecord(DataInputStream in, int version) throws IOException {
            int typeOrdinal = in.read();
            if (typeOrdinal < 0) {
                return null;
            }
            UpdateType type = UpdateType.values()[typeOrdinal];
            String id = in.readUTF();
            if (type == UpdateType.DELETE) {
                return new Rec(id, null, null, 0, null, 0, 0, null, 0, 0, 0, type);
            }
            String queue = in.readUTF();
            long size = in.readLong();
            long entry = in.readLong();
            long lineage = in.readLong();
            String container = in.readUTF();
            int section = in.readShort();
            String resourceId = in.readUTF();
            long claimOffset = in.readLong();
            long claimLength = in.readLong();
            int count = in.readShort();
            Map<String, String> attributes = new HashMap<>(count * 2);
            for (int i = 0; i < count; i++) {
                attributes.put(in.readUTF(), in.readUTF());
            }
            return new Rec(id, attributes, container, section, resourceId, claimOffset, claimLength, queue, size,
                entry, lineage, type);
        }

        @Override
        public Object getRecordIdentifier(Rec rec) {
            return rec.id;
        }

        @Override
        public UpdateType getUpdateType(Rec rec) {
            return rec.type;
        }

        @Override
        public String getLocation(Rec rec) {
            return null;
        }

        @Override
        public int getVersion() {
            return 1;
        }
    }

    static final class RecSerDeFactory implements SerDeFactory<Rec> {
        private final RecSerDe serde = new RecSerDe();

        @Override
        public SerDe<Rec> createSerDe(String encodingName) {
            return serde;
        }

        @Override
        public Object getRecordIdentifier(Rec rec) {
            return rec.id;
        }

        @Override
        public UpdateType getUpdateType(Rec rec) {
            return rec.type;
        }

        @Override
        public String getLocation(Rec rec) {
            return null;
        }
    }

    static Rec record(long n) {
        Map<String, String> attributes = new HashMap<>();
        attributes.put("filename", "file-" + n + ".json");
        attributes.put("path", "/data/in/");
        attributes.put("uuid", String.format("00000000-0000-4000-8000-%012d", n));
        attributes.put("mime.type", "application/json");
        attributes.put("source", "ListenHTTP");
        attributes.put("http.remote.host", "10.0.0." + (n % 250));
        attributes.put("kafka.partition", Long.toString(n % 16));
        attributes.put("kafka.offset", Long.toString(n * 7));
        attributes.put("record.count", Long.toString(n % 1000));
        attributes.put("schema.name", "events-v3");
        return new Rec("ff-" + n, attributes, "default", (int) ((n / 1000) % 1024), "1700000000000-" + (n / 1000),
            (n % 1000) * 4096, 4096, "queue-1", 4096, 1700000000000L + n, 1700000000000L, UpdateType.CREATE);
    }

    public static void main(String[] args) throws Exception {
        if (args.length >= 6 && args[0].equals("throughput")) {
            throughput(new File(args[1]), Integer.parseInt(args[2]), Integer.parseInt(args[3]),
                Double.parseDouble(args[4]), Boolean.parseBoolean(args[5]));
        } else if (args.length >= 3 && args[0].equals("recover")) {
            recover(new File(args[1]), Integer.parseInt(args[2]));
        } else {
            System.err.println("usage: throughput DIR THREADS BATCH SECONDS SYNC | recover DIR RECORDS");
            System.exit(2);
        }
    }

    static void throughput(File dir, int threads, int batch, double seconds, boolean sync) throws Exception {
        WriteAheadRepository<Rec> wal = new SequentialAccessWriteAheadLog<>(dir, new RecSerDeFactory());
        wal.recoverRecords();
        AtomicLong next = new AtomicLong();
        AtomicLong written = new AtomicLong();
        // Warm up the JIT and the file before timing, as custody's side warms up too.
        for (int i = 0; i < 200; i++) {
            wal.update(batchOf(next, batch), sync);
        }
        CountDownLatch start = new CountDownLatch(1);
        List<Thread> workers = new ArrayList<>();
        long[] deadline = new long[1];
        Throwable[] failure = new Throwable[1];
        for (int t = 0; t < threads; t++) {
            Thread worker = new Thread(() -> {
                try {
                    start.await();
                    while (System.nanoTime() < deadline[0]) {
                        wal.update(batchOf(next, batch), sync);
                        written.addAndGet(batch);
                    }
                } catch (Throwable e) {
                    failure[0] = e;
                }
            });
            worker.start();
            workers.add(worker);
        }
        long begin = System.nanoTime();
        deadline[0] = begin + (long) (seconds * 1e9);
        start.countDown();
        for (Thread worker : workers) {
            worker.join();
        }
        double elapsed = (System.nanoTime() - begin) / 1e9;
        wal.shutdown();
        if (failure[0] != null) {
            throw new RuntimeException(failure[0]);
        }
        System.out.printf("{\"updates\": %d, \"seconds\": %.6f, \"updates_per_sec\": %.1f}%n",
            written.get(), elapsed, written.get() / elapsed);
    }

    static Collection<Rec> batchOf(AtomicLong next, int batch) {
        List<Rec> records = new ArrayList<>(batch);
        for (int i = 0; i < batch; i++) {
            records.add(record(next.getAndIncrement()));
        }
        return records;
    }

    static void recover(File dir, int count) throws Exception {
        WriteAheadRepository<Rec> wal = new SequentialAccessWriteAheadLog<>(dir, new RecSerDeFactory());
        wal.recoverRecords();
        AtomicLong next = new AtomicLong();
        for (int i = 0; i < count; i += 1000) {
            wal.update(batchOf(next, Math.min(1000, count - i)), false);
        }
        wal.checkpoint();
        wal.shutdown();
        long begin = System.nanoTime();
        WriteAheadRepository<Rec> reopened = new SequentialAccessWriteAheadLog<>(dir, new RecSerDeFactory());
        int recovered = reopened.recoverRecords().size();
        double elapsed = (System.nanoTime() - begin) / 1e9;
        reopened.shutdown();
        System.out.printf("{\"records\": %d, \"recover_s\": %.6f}%n", recovered, elapsed);
    }
}
