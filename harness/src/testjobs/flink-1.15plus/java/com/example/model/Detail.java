package com.example.model;

/** Named only by a field of {@link Event}: described through the fields' closure. */
public class Detail {
    public String note;

    public Detail() {}
}
