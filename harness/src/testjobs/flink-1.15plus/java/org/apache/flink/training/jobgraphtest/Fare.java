package org.apache.flink.training.jobgraphtest;

/** A POJO only a field of {@link Ride} names: described through the state's type. */
public class Fare {
    public float total;
    public String currency;

    public Fare() {}
}
