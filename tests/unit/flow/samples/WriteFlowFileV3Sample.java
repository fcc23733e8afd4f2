// Writes nifi-2.3.0.flowfilev3 with Apache NiFi's own packager (FlowFilePackagerV3 of
// org.apache.nifi:nifi-flowfile-packager:2.3.0, built for Java 21+), for
// tests/unit/flow/test_flowfile_v3.py:
//   javac -cp nifi-flowfile-packager-2.3.0.jar WriteFlowFileV3Sample.java
//   java -cp nifi-flowfile-packager-2.3.0.jar:. WriteFlowFileV3Sample nifi-2.3.0.flowfilev3
import java.io.*;
import java.util.*;
import org.apache.nifi.util.FlowFilePackagerV3;

public class WriteFlowFileV3Sample {
    public static void main(String[] args) throws Exception {
        FlowFilePackagerV3 packager = new FlowFilePackagerV3();
        try (OutputStream out = new FileOutputStream(args[0])) {
            Map<String, String> first = new LinkedHashMap<>();
            first.put("filename", "orders.csv");
            first.put("path", "./");
            first.put("mime.type", "text/csv");
            first.put("unicode", "\u00e9t\u00e9 \u65e5\u672c");
            byte[] content = "order_id,amount\n1,250.00\n".getBytes("UTF-8");
            packager.packageFlowFile(new ByteArrayInputStream(content), out, first, content.length);
            Map<String, String> second = new LinkedHashMap<>();
            second.put("long", "x".repeat(70000));
            packager.packageFlowFile(new ByteArrayInputStream(new byte[0]), out, second, 0);
            Map<String, String> third = new LinkedHashMap<>();
            third.put("uuid", "00000000-0000-4000-8000-000000000003");
            byte[] binary = new byte[256];
            for (int i = 0; i < 256; i++) binary[i] = (byte) i;
            packager.packageFlowFile(new ByteArrayInputStream(binary), out, third, binary.length);
        }
    }
}
